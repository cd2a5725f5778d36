/*
 * LeakAnalysis - what LeakCanary's Shark concludes from a heap dump, by
 * Shark's rules, on VisualVM's heap library (Debian package visualvm), so
 * that tests can prove a shrunk or redacted dump leads to the same
 * conclusions as its input:
 *
 * - metadata: android.os.Build.MANUFACTURER, ID and Build.VERSION.SDK_INT
 *   (what Shark's known-library-leak rules match on), the number of classes,
 *   instances, arrays and threads;
 * - every KeyedWeakReference, of LeakCanary 2 (leakcanary.) and 1.x
 *   (com.squareup.leakcanary.): its key, its 1.x name, whether its referent
 *   is set and it is retained (retainedUptimeMillis not -1), and the
 *   durations Shark derives from KeyedWeakReference.heapDumpUptimeMillis.
 *   The 2.x description is free text that --redact removes: not reported;
 * - for each leaking object (a set referent of a retained reference): the
 *   shortest path from a GC root, found breadth first with high-priority
 *   references before low-priority ones (Java locals, and roots of the kinds
 *   Shark ranks low), leaking objects being leaves;
 * - what each leaking object retains: the objects reachable from it and not
 *   from the roots without going through a leaking object, and the sum of
 *   their shallow sizes as Shark counts them (fields' bytes; a String with
 *   its value array; an array's elements);
 * - the number of objects reachable from the roots without going through a
 *   leaking object (what every retained size depends on).
 *
 * References Shark never follows are not followed: the referent of a
 * WeakReference, SoftReference, PhantomReference or KeyedWeakReference; the
 * prev, next and element of a Finalizer, FinalizerReference or Cleaner;
 * InternalLeakCanary.resumedActivity; and the Java locals of the threads
 * named main, FinalizerWatchdogDaemon and LeakCanary-Heap-Dump (JdkReference-
 * Matchers and AndroidReferenceMatchers). Other Java locals are references
 * of their thread's object, as Shark reads them.
 *
 *   LeakAnalysis FILE            print the analysis
 *   LeakAnalysis --follow-every-local FILE
 *                                the same, following the locals of every
 *                                thread (what a dump whose thread names are
 *                                lost leads to)
 *   LeakAnalysis [--objects-only] BEFORE AFTER
 *                                print both and exit 1 unless they agree,
 *                                retained bytes within 1% (object counts
 *                                only with --objects-only)
 */
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.graalvm.visualvm.lib.jfluid.heap.ArrayItemValue;
import org.graalvm.visualvm.lib.jfluid.heap.Field;
import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.GCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.JavaFrameGCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ThreadObjectGCRoot;

public class LeakAnalysis {
    static final Set<String> IGNORED_LOCALS_OF =
        Set.of("main", "FinalizerWatchdogDaemon", "LeakCanary-Heap-Dump");
    /** Class name to the fields of it and its subclasses Shark never follows. */
    static final Map<String, Set<String>> IGNORED_FIELDS = Map.of(
        "java.lang.ref.WeakReference", Set.of("referent"),
        "leakcanary.KeyedWeakReference", Set.of("referent"),
        "java.lang.ref.SoftReference", Set.of("referent"),
        "java.lang.ref.PhantomReference", Set.of("referent"),
        "java.lang.ref.Finalizer", Set.of("prev", "element", "next"),
        "java.lang.ref.FinalizerReference", Set.of("prev", "element", "next"),
        "sun.misc.Cleaner", Set.of("prev", "next"),
        "leakcanary.internal.InternalLeakCanary", Set.of("resumedActivity"));
    static final Set<String> PRIMITIVE_WRAPPERS = Set.of("java.lang.Boolean", "java.lang.Character",
        "java.lang.Float", "java.lang.Double", "java.lang.Byte", "java.lang.Short",
        "java.lang.Integer", "java.lang.Long");
    /** Root kinds Shark visits after every other reference. */
    static final Set<String> LOW_PRIORITY_ROOTS = Set.of(GCRoot.JAVA_FRAME, GCRoot.UNKNOWN,
        GCRoot.INTERNED_STRING, GCRoot.FINALIZING, GCRoot.DEBUGGER, GCRoot.REFERENCE_CLEANUP,
        GCRoot.VM_INTERNAL, "unreachable");
    static final String[] KEYED_WEAK_REFERENCES =
        { "leakcanary.KeyedWeakReference", "com.squareup.leakcanary.KeyedWeakReference" };

    /** One analysis: lines that must agree exactly, and the retained sizes. */
    static class Report {
        final List<String> lines = new ArrayList<>();
        /** leaking object id to { bytes, objects } */
        final Map<Long, long[]> retained = new TreeMap<>();

        void print(String title) {
            System.out.println("== " + title);
            for (String l : lines)
                System.out.println(l);
            for (Map.Entry<Long, long[]> e : retained.entrySet())
                System.out.println("retained " + e.getKey() + " " + e.getValue()[0] + " bytes "
                                   + e.getValue()[1] + " objects");
        }
    }

    /** A step of a path: how an object was first reached. */
    static final class Step {
        final long id;
        final Step parent;
        final String how;   // root kind, field name, [index] or <Java Local>

        Step(long id, Step parent, String how) {
            this.id = id;
            this.parent = parent;
            this.how = how;
        }
    }

    /** A reference from an object, as Shark reads it. */
    static final class Ref {
        final long target;
        final String how;
        final boolean lowPriority;

        Ref(long target, String how, boolean lowPriority) {
            this.target = target;
            this.how = how;
            this.lowPriority = lowPriority;
        }
    }

    final Heap heap;
    final int idSize;
    final Map<Long, List<Long>> localsByThread = new HashMap<>();
    final Map<JavaClass, Long> instanceBytes = new HashMap<>();

    LeakAnalysis(String path) throws IOException {
        idSize = readIdSize(path);
        heap = HeapFactory.createHeap(new File(path));
        for (GCRoot r : heap.getGCRoots()) {
            if (!(r instanceof JavaFrameGCRoot) || r.getInstance() == null)
                continue;
            ThreadObjectGCRoot t = ((JavaFrameGCRoot) r).getThreadGCRoot();
            if (t != null && t.getInstance() != null)
                localsByThread.computeIfAbsent(t.getInstance().getInstanceId(), k -> new ArrayList<>())
                    .add(r.getInstance().getInstanceId());
        }
    }

    static int readIdSize(String path) throws IOException {
        try (DataInputStream in = new DataInputStream(new FileInputStream(path))) {
            while (in.readByte() != 0) {
            }
            return in.readInt();
        }
    }

    static boolean followEveryLocal;

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("--follow-every-local")) {
            followEveryLocal = true;
            new LeakAnalysis(args[1]).analyze().print(args[1]);
            return;
        }
        boolean objectsOnly = args.length > 0 && args[0].equals("--objects-only");
        String[] files = objectsOnly ? Arrays.copyOfRange(args, 1, args.length) : args;
        if (files.length < 1 || files.length > 2) {
            System.err.println("usage: LeakAnalysis [--follow-every-local] FILE | LeakAnalysis [--objects-only] BEFORE AFTER");
            System.exit(2);
        }
        Report before = new LeakAnalysis(files[0]).analyze();
        before.print(files[0]);
        if (files.length == 1)
            return;
        Report after = new LeakAnalysis(files[1]).analyze();
        after.print(files[1]);
        List<String> differences = compare(before, after, objectsOnly);
        for (String d : differences)
            System.out.println("DIFFERS: " + d);
        System.exit(differences.isEmpty() ? 0 : 1);
    }

    static List<String> compare(Report a, Report b, boolean objectsOnly) {
        List<String> d = new ArrayList<>();
        Set<String> inB = new HashSet<>(b.lines);
        Set<String> inA = new HashSet<>(a.lines);
        for (String l : a.lines)
            if (!inB.contains(l))
                d.add("before only: " + l);
        for (String l : b.lines)
            if (!inA.contains(l))
                d.add("after only: " + l);
        if (!a.retained.keySet().equals(b.retained.keySet()))
            d.add("leaking objects " + a.retained.keySet() + " became " + b.retained.keySet());
        for (Map.Entry<Long, long[]> e : a.retained.entrySet()) {
            long[] x = e.getValue(), y = b.retained.get(e.getKey());
            if (y == null)
                continue;
            boolean bytesOk = objectsOnly || Math.abs(x[0] - y[0]) * 100 <= x[0];
            if (x[1] != y[1] || !bytesOk)
                d.add("retained by " + e.getKey() + ": " + x[0] + " bytes " + x[1] + " objects became "
                      + y[0] + " bytes " + y[1] + " objects");
        }
        return d;
    }

    Report analyze() {
        Report r = new Report();
        metadata(r);
        List<Long> leaking = watchedObjects(r);
        Set<Long> leakingSet = new HashSet<>(leaking);
        Set<Long> visited = new HashSet<>();
        Map<Long, Step> found = shortestPaths(leakingSet, visited);
        r.lines.add("reachable without the leaking objects " + visited.size());
        for (long id : leaking) {
            Step s = found.get(id);
            r.lines.add("leak " + id + " " + className(id) + (s == null ? " unreachable" : ""));
            if (s != null)
                r.lines.add("leak " + id + " trace " + trace(s));
        }
        // As Shark: each leaking object, in the order they were reached,
        // retains what no root nor earlier leaking object reaches.
        for (Step s : found.values()) {
            r.retained.put(s.id, retain(s.id, visited));
        }
        return r;
    }

    void metadata(Report r) {
        JavaClass build = heap.getJavaClassByName("android.os.Build");
        JavaClass version = heap.getJavaClassByName("android.os.Build$VERSION");
        if (build != null) {
            r.lines.add("metadata Build.MANUFACTURER " + string(staticValue(build, "MANUFACTURER")));
            r.lines.add("metadata Build.ID " + string(staticValue(build, "ID")));
        }
        if (version != null)
            r.lines.add("metadata Build.VERSION.SDK_INT " + staticValue(version, "SDK_INT"));
        long instances = 0, objectArrays = 0, primitiveArrays = 0;
        for (JavaClass c : heap.getAllClasses()) {
            if (!c.isArray())
                instances += c.getInstancesCount();
            else if (isPrimitiveArrayClass(c.getName()))
                primitiveArrays += c.getInstancesCount();
            else
                objectArrays += c.getInstancesCount();
        }
        int threads = 0;
        for (GCRoot g : heap.getGCRoots())
            if (GCRoot.THREAD_OBJECT.equals(g.getKind()))
                threads++;
        r.lines.add("metadata classes " + heap.getAllClasses().size() + " instances " + instances
                    + " object arrays " + objectArrays + " primitive arrays " + primitiveArrays
                    + " threads " + threads);
    }

    /** Every KeyedWeakReference reported, and the ids of the leaking objects, by id. */
    List<Long> watchedObjects(Report r) {
        JavaClass kwr2 = heap.getJavaClassByName(KEYED_WEAK_REFERENCES[0]);
        Long heapDumpUptime = kwr2 == null ? null : asLong(staticValue(kwr2, "heapDumpUptimeMillis"));
        List<String> watched = new ArrayList<>();
        Set<Long> leaking = new HashSet<>();
        for (String name : KEYED_WEAK_REFERENCES) {
            JavaClass c = heap.getJavaClassByName(name);
            if (c == null)
                continue;
            for (Instance ref : c.getInstances()) {
                Instance referent = (Instance) field(ref, "referent");
                StringBuilder w = new StringBuilder("watched " + name + " key " + string(field(ref, "key")));
                if (name.startsWith("com."))
                    w.append(" name ").append(string(field(ref, "name")));
                boolean retained = true;
                // 1.x has no uptimes: each of its references is retained
                if (heapDumpUptime != null && !name.startsWith("com.")) {
                    long watchedAt = asLong(field(ref, "watchUptimeMillis"));
                    long retainedAt = asLong(field(ref, "retainedUptimeMillis"));
                    retained = retainedAt != -1;
                    w.append(" watchDurationMillis ").append(heapDumpUptime - watchedAt);
                    w.append(" retainedDurationMillis ").append(retained ? heapDumpUptime - retainedAt : -1);
                }
                w.append(referent == null ? " referent null" : " referent " + referent.getInstanceId());
                if (referent != null && retained) {
                    leaking.add(referent.getInstanceId());
                    w.append(" leaking");
                }
                watched.add(w.toString());
            }
        }
        watched.sort(null);
        r.lines.addAll(watched);
        List<Long> ids = new ArrayList<>(leaking);
        ids.sort(null);
        return ids;
    }

    /**
     * Breadth first from the roots, high priority before low, as Shark's
     * PrioritizingShortestPathFinder: returns the first step reaching each
     * leaking object and leaves in visited every object reached.
     */
    Map<Long, Step> shortestPaths(Set<Long> leaking, Set<Long> visited) {
        Deque<Step> first = new ArrayDeque<>();
        Deque<Step> last = new ArrayDeque<>();
        Map<Long, Step> waitingLast = new HashMap<>();
        Map<Long, Step> found = new LinkedHashMap<>();
        boolean[] visitingLast = { false };
        for (GCRoot g : sortedRoots()) {
            long id = g.getInstance().getInstanceId();
            enqueue(new Step(id, null, g.getKind()), LOW_PRIORITY_ROOTS.contains(g.getKind()),
                    visited, first, last, waitingLast, visitingLast[0]);
        }
        while (!first.isEmpty() || !last.isEmpty()) {
            Step s;
            if (!visitingLast[0] && !first.isEmpty()) {
                s = first.poll();
            } else {
                visitingLast[0] = true;
                s = last.poll();
                waitingLast.remove(s.id);
            }
            if (leaking.contains(s.id)) {
                found.put(s.id, s);
                continue;
            }
            for (Ref ref : references(s.id))
                enqueue(new Step(ref.target, s, ref.how), ref.lowPriority, visited, first, last,
                        waitingLast, visitingLast[0]);
        }
        return found;
    }

    static void enqueue(Step s, boolean lowPriority, Set<Long> visited, Deque<Step> first,
                        Deque<Step> last, Map<Long, Step> waitingLast, boolean visitingLast) {
        boolean last2 = visitingLast || lowPriority;
        if (!visited.add(s.id)) {
            Step waiting = waitingLast.get(s.id);
            if (!last2 && waiting != null) {
                last.remove(waiting);
                waitingLast.remove(s.id);
                first.add(s);
            }
        } else if (last2) {
            last.add(s);
            waitingLast.put(s.id, s);
        } else {
            first.add(s);
        }
    }

    /**
     * The roots Shark starts from: thread objects first, then by kind and
     * class name (ids break ties, for a stable order); Java frames of a
     * thread with a thread object are that thread's references instead.
     */
    List<GCRoot> sortedRoots() {
        List<GCRoot> roots = new ArrayList<>();
        for (GCRoot g : heap.getGCRoots()) {
            if (g.getInstance() == null)
                continue;
            if (g instanceof JavaFrameGCRoot) {
                ThreadObjectGCRoot t = ((JavaFrameGCRoot) g).getThreadGCRoot();
                if (t != null && t.getInstance() != null)
                    continue;
            }
            roots.add(g);
        }
        roots.sort((a, b) -> {
            boolean ta = GCRoot.THREAD_OBJECT.equals(a.getKind()), tb = GCRoot.THREAD_OBJECT.equals(b.getKind());
            if (ta != tb)
                return ta ? -1 : 1;
            int c = b.getKind().compareTo(a.getKind());
            if (c == 0)
                c = className(a.getInstance().getInstanceId()).compareTo(className(b.getInstance().getInstanceId()));
            if (c == 0)
                c = Long.compare(a.getInstance().getInstanceId(), b.getInstance().getInstanceId());
            return c;
        });
        return roots;
    }

    /** The references Shark reads from an object, in its order. */
    List<Ref> references(long id) {
        List<Ref> refs = new ArrayList<>();
        JavaClass asClass = heap.getJavaClassByID(id);
        if (asClass != null) {
            for (FieldValue v : asClass.getStaticFieldValues())
                if (v instanceof ObjectFieldValue && ((ObjectFieldValue) v).getInstance() != null)
                    refs.add(new Ref(((ObjectFieldValue) v).getInstance().getInstanceId(),
                                     v.getField().getName(), false));
            return refs;
        }
        Instance i = heap.getInstanceByID(id);
        if (i == null || i instanceof PrimitiveArrayInstance)
            return refs;
        if (i instanceof ObjectArrayInstance) {
            for (ArrayItemValue v : ((ObjectArrayInstance) i).getItems())
                if (v.getInstance() != null)
                    refs.add(new Ref(v.getInstance().getInstanceId(), "[" + v.getIndex() + "]", false));
            return refs;
        }
        String cls = i.getJavaClass().getName();
        if (cls.equals("java.lang.String") || PRIMITIVE_WRAPPERS.contains(cls))
            return refs;
        List<Long> locals = localsByThread.get(id);
        if (locals != null && (followEveryLocal || !IGNORED_LOCALS_OF.contains(threadName(i))))
            for (long local : locals)
                refs.add(new Ref(local, "<Java Local>", true));
        Set<String> ignored = ignoredFields(i.getJavaClass());
        List<Ref> fields = new ArrayList<>();
        for (FieldValue v : i.getFieldValues()) {
            if (!(v instanceof ObjectFieldValue) || ((ObjectFieldValue) v).getInstance() == null)
                continue;
            String name = v.getField().getName();
            if (!ignored.contains(name))
                fields.add(new Ref(((ObjectFieldValue) v).getInstance().getInstanceId(), name, false));
        }
        fields.sort((a, b) -> a.how.compareTo(b.how));
        refs.addAll(fields);
        return refs;
    }

    static Set<String> ignoredFields(JavaClass c) {
        Set<String> names = new HashSet<>();
        for (; c != null; c = c.getSuperClass()) {
            Set<String> s = IGNORED_FIELDS.get(c.getName());
            if (s != null)
                names.addAll(s);
        }
        return names;
    }

    /**
     * What a leaking object retains: breadth first from it over the objects
     * that no root and no leaking object explored earlier reached (a leaking
     * object reached from the roots is in visited already).
     */
    long[] retain(long leakingId, Set<Long> visited) {
        long bytes = shallowSize(leakingId), objects = 1;
        Deque<Long> queue = new ArrayDeque<>();
        queue.add(leakingId);
        while (!queue.isEmpty()) {
            for (Ref ref : references(queue.poll())) {
                if (!visited.add(ref.target))
                    continue;
                bytes += shallowSize(ref.target);
                objects++;
                queue.add(ref.target);
            }
        }
        return new long[] { bytes, objects };
    }

    /** The path, root first: the root's kind and class, then class.field to each object. */
    String trace(Step s) {
        List<Step> path = new ArrayList<>();
        for (Step p = s; p != null; p = p.parent)
            path.add(0, p);
        StringBuilder b = new StringBuilder();
        for (Step p : path) {
            if (p.parent == null)
                b.append(p.how).append(' ').append(describe(p.id));
            else
                b.append(" -> ").append(className(p.parent.id)).append('.').append(p.how)
                 .append(' ').append(describe(p.id));
        }
        return b.toString();
    }

    /** An object's class, and the name of a thread (Shark's thread label). */
    String describe(long id) {
        Instance i = heap.getInstanceByID(id);
        String cls = className(id);
        if (i != null && localsByThread.containsKey(id))
            return cls + " (thread '" + threadName(i) + "')";
        return cls;
    }

    String className(long id) {
        JavaClass c = heap.getJavaClassByID(id);
        if (c != null)
            return "class " + c.getName();
        Instance i = heap.getInstanceByID(id);
        return i == null ? "missing" : i.getJavaClass().getName();
    }

    String threadName(Instance thread) {
        return string(field(thread, "name"));
    }

    /** Shark's shallow size: fields' bytes, a String with its value, an array's elements. */
    long shallowSize(long id) {
        JavaClass asClass = heap.getJavaClassByID(id);
        if (asClass != null)
            return classRecordSize(asClass);
        Instance i = heap.getInstanceByID(id);
        if (i == null)
            return 0;
        if (i instanceof ObjectArrayInstance)
            return (long) ((ObjectArrayInstance) i).getLength() * idSize;
        if (i instanceof PrimitiveArrayInstance)
            return (long) ((PrimitiveArrayInstance) i).getLength()
                * typeSize(i.getJavaClass().getName().replace("[]", ""));
        long size = fieldBytes(i.getJavaClass());
        if (i.getJavaClass().getName().equals("java.lang.String")) {
            Object value = field(i, "value");
            if (value instanceof Instance)
                size += shallowSize(((Instance) value).getInstanceId());
        }
        return size;
    }

    long fieldBytes(JavaClass c) {
        Long cached = instanceBytes.get(c);
        if (cached != null)
            return cached;
        long n = 0;
        for (JavaClass k = c; k != null; k = k.getSuperClass())
            for (Field f : k.getFields())
                if (!f.isStatic())
                    n += typeSize(f.getType().getName());
        instanceBytes.put(c, n);
        return n;
    }

    /** The size of the class's CLASS_DUMP record, as Shark counts a class. */
    long classRecordSize(JavaClass c) {
        long n = 1 + idSize * 7L + 4 + 4 + 2 + 2 + 2;
        for (FieldValue v : c.getStaticFieldValues())
            n += idSize + 1 + typeSize(v.getField().getType().getName());
        for (Field f : c.getFields())
            if (!f.isStatic())
                n += idSize + 1;
        return n;
    }

    int typeSize(String type) {
        switch (type) {
        case "boolean": case "byte": return 1;
        case "char": case "short": return 2;
        case "int": case "float": return 4;
        case "long": case "double": return 8;
        default: return idSize;
        }
    }

    static boolean isPrimitiveArrayClass(String name) {
        return name.endsWith("[]") && !name.endsWith("[][]")
            && Set.of("boolean", "byte", "char", "short", "int", "float", "long", "double")
                  .contains(name.substring(0, name.length() - 2));
    }

    /** A field's value: an Instance (null for null), or a primitive as a String. */
    static Object field(Instance i, String name) {
        return value(i.getFieldValues(), name);
    }

    static Object staticValue(JavaClass c, String name) {
        return value(c.getStaticFieldValues(), name);
    }

    /** The first field of that name: the subclass's, as the library lists them. */
    static Object value(List<FieldValue> values, String name) {
        for (FieldValue v : values) {
            if (!v.getField().getName().equals(name))
                continue;
            return v instanceof ObjectFieldValue ? ((ObjectFieldValue) v).getInstance() : v.getValue();
        }
        return null;
    }

    static Long asLong(Object v) {
        return v == null ? null : Long.valueOf(v.toString());
    }

    /** A String's text: char[] (up to JDK 8, ART), or byte[] with its coder. */
    static String string(Object o) {
        if (!(o instanceof Instance))
            return "null";
        Instance s = (Instance) o;
        Object value = field(s, "value");
        if (!(value instanceof PrimitiveArrayInstance))
            return "?";
        List<String> elements = ((PrimitiveArrayInstance) value).getValues();
        String type = ((Instance) value).getJavaClass().getName();
        StringBuilder b = new StringBuilder();
        if (type.equals("char[]")) {
            int offset = 0, count = elements.size();
            Object off = field(s, "offset"), cnt = field(s, "count");
            if (off != null && cnt != null) {
                offset = Integer.parseInt(off.toString());
                count = Integer.parseInt(cnt.toString());
            }
            for (int k = offset; k < offset + count && k < elements.size(); k++)
                b.append(elements.get(k));
            return b.toString();
        }
        byte[] bytes = new byte[elements.size()];
        for (int k = 0; k < bytes.length; k++)
            bytes[k] = Byte.parseByte(elements.get(k));
        Object coder = field(s, "coder");
        return new String(bytes, coder != null && coder.toString().equals("1")
                          ? StandardCharsets.UTF_16LE : StandardCharsets.ISO_8859_1);
    }
}
