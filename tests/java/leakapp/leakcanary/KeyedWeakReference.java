package leakcanary;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;

/**
 * The fields LeakCanary 2's KeyedWeakReference has, under its name, so that
 * a HotSpot dump of LeakApp reads to Shark's rules as a LeakCanary dump.
 */
public class KeyedWeakReference extends WeakReference<Object> {
    /** When the heap was dumped; Shark subtracts the uptimes below from it. */
    public static volatile long heapDumpUptimeMillis;

    public final String key;
    public final String description;
    public final long watchUptimeMillis;
    /** -1 while the object is watched but not yet retained. */
    public volatile long retainedUptimeMillis = -1;

    public KeyedWeakReference(Object referent, String key, String description,
                              long watchUptimeMillis, ReferenceQueue<Object> queue) {
        super(referent, queue);
        this.key = key;
        this.description = description;
        this.watchUptimeMillis = watchUptimeMillis;
    }
}
