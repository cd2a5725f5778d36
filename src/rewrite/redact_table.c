/*
 * redact_table.c - the fields and thread names redaction treats apart from
 * the rest (redact_table.h).
 */
#include <string.h>

#include "redact.h"
#include "redact_table.h"

const struct field_entry redact_field_table[] = {
    { "java.lang.String", "hash", REDACT_CLEAR },
    { "java.lang.String", "hashIsZero", REDACT_CLEAR },
    { "java.lang.String", "hashCode", REDACT_CLEAR }, /* Android 5 and 6 */
    { "java.lang.String", "count", REDACT_KEEP },
    { "java.lang.String", "offset", REDACT_KEEP },
    { "java.lang.String", "coder", REDACT_KEEP },
    { "java.util.HashMap$Node", "hash", REDACT_CLEAR },
    { "java.util.HashMap$Entry", "hash", REDACT_CLEAR },
    { "java.util.HashMap$HashMapEntry", "hash", REDACT_CLEAR },
    { "java.util.Hashtable$Entry", "hash", REDACT_CLEAR },
    { "java.util.Hashtable$HashtableEntry", "hash", REDACT_CLEAR },
    { "java.util.WeakHashMap$Entry", "hash", REDACT_CLEAR },
    { "java.util.concurrent.ConcurrentHashMap$Node", "hash", REDACT_CLEAR_KEY_HASH },
    { "java.util.concurrent.ConcurrentHashMap$HashEntry", "hash", REDACT_CLEAR },
    { "java.lang.AbstractStringBuilder", "count", REDACT_KEEP },
    { "java.lang.AbstractStringBuilder", "coder", REDACT_KEEP },
    { "java.lang.Enum", "ordinal", REDACT_KEEP },
    { "java.util.ArrayList", "size", REDACT_KEEP },
    { "java.util.ArrayList$SubList", "offset", REDACT_KEEP },
    { "java.util.ArrayList$SubList", "size", REDACT_KEEP },
    { "java.util.LinkedList", "size", REDACT_KEEP },
    { "java.util.Vector", "elementCount", REDACT_KEEP },
    { "java.util.ArrayDeque", "head", REDACT_KEEP },
    { "java.util.ArrayDeque", "tail", REDACT_KEEP },
    { "java.util.PriorityQueue", "size", REDACT_KEEP },
    { "java.util.HashMap", "size", REDACT_KEEP },
    { "java.util.Hashtable", "count", REDACT_KEEP },
    { "java.util.WeakHashMap", "size", REDACT_KEEP },
    { "java.util.IdentityHashMap", "size", REDACT_KEEP },
    { "java.util.TreeMap", "size", REDACT_KEEP },
    { "java.util.concurrent.ConcurrentHashMap", "baseCount", REDACT_KEEP },
    { "java.util.concurrent.ConcurrentHashMap$Segment", "count", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "count", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "takeIndex", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "putIndex", REDACT_KEEP },
    { "android.util.ArrayMap", "mSize", REDACT_KEEP },
    { "android.util.ArraySet", "mSize", REDACT_KEEP },
    { "android.util.SparseArray", "mSize", REDACT_KEEP },
    { "android.util.SparseIntArray", "mSize", REDACT_KEEP },
    { "android.util.SparseLongArray", "mSize", REDACT_KEEP },
    { "android.util.SparseBooleanArray", "mSize", REDACT_KEEP },
    { "android.util.LongSparseArray", "mSize", REDACT_KEEP },
    { "java.lang.Thread", "priority", REDACT_KEEP },
    { "java.lang.Thread", "threadStatus", REDACT_KEEP },
    { "java.lang.Thread", "tid", REDACT_KEEP },
    { "java.lang.Thread$FieldHolder", "priority", REDACT_KEEP },
    { "java.lang.Thread$FieldHolder", "threadStatus", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "watchUptimeMillis", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "retainedUptimeMillis", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "heapDumpUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "watchUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "retainedUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "heapDumpUptimeMillis", REDACT_KEEP },
    { "libcore.util.NativeAllocationRegistry", "size", REDACT_KEEP },
    { "android.os.Build$VERSION", "SDK_INT", REDACT_KEEP },
    { "android.view.View", "mWindowAttachCount", REDACT_KEEP },
    { "android.view.View", "mID", REDACT_KEEP },
    { "android.view.WindowManager$LayoutParams", "type", REDACT_KEEP },
    { "android.graphics.Bitmap", "mWidth", REDACT_KEEP },
    { "android.graphics.Bitmap", "mHeight", REDACT_KEEP },
    { "android.graphics.Bitmap", "mNativePtr", REDACT_KEEP },
    { "android.graphics.Bitmap$DumpData", "count", REDACT_KEEP },
    { "android.graphics.Bitmap$DumpData", "format", REDACT_KEEP },
};
const size_t redact_field_table_len = sizeof redact_field_table / sizeof redact_field_table[0];
_Static_assert(2 * (sizeof redact_field_table / sizeof redact_field_table[0]) < TABLE_SLOTS,
               "the index of names keeps free slots");

/* The names of the threads of the runtimes and of LeakCanary, whose
 * locals Shark's matchers ignore by name: with --redact they keep their
 * text (and no other thread's name does).  The man page lists them too. */
const char *const redact_runtime_threads[] = {
    "main", "Finalizer", "FinalizerDaemon", "FinalizerWatchdogDaemon",
    "ReferenceQueueDaemon", "HeapTaskDaemon", "Reference Handler", "Signal Catcher",
    "Signal Dispatcher", "Common-Cleaner", "Attach Listener", "Notification Thread",
    "Service Thread", "Monitor Deflation Thread", "Profile Saver", "Jit thread pool worker thread 0",
    "LeakCanary-Heap-Dump",
};
const size_t redact_runtime_threads_len =
    sizeof redact_runtime_threads / sizeof redact_runtime_threads[0];

/* Is entry `i` of the field table one of the class whose entries start
 * at `first` - 1? */
int redact_table_in_class(uint64_t first, size_t i)
{
    return i < redact_field_table_len && strcmp(redact_field_table[i].cls, redact_field_table[first - 1].cls) == 0;
}
