/*
 * HeapView - load a heap dump with VisualVM's heap library (Debian package
 * visualvm) and print what an analyst sees of it, canonically: the same
 * text for two dumps that hold the same heap in another record order.
 * tests/compare-views.sh diffs the views of two dumps.
 *
 *   dump classes=N objects=N roots=N
 *   class NAME @ID super=NAME loader=@ID instances=N size=N   (by name, id)
 *   static @CLASS NAME.FIELD = VALUE | -> @TARGET                 (field order)
 *   root KIND @ID                                                 (by kind, id)
 *   obj @ID CLASS size=N                                          (by id)
 *   .  @ID DECLARING.FIELD = VALUE | -> @TARGET       (instances, field order)
 *   .  @ID [INDEX] -> @TARGET                         (object arrays, non-null)
 *   .  @ID array TYPE[] length=N [md5=HEX]            (primitive arrays)
 *   .  @ID text "TEXT" | text length=N md5=HEX        (java.lang.String)
 *
 * Ids are hex; a root or reference to an object the dump lacks names its
 * id all the same. Sizes are VisualVM's ("?" where it cannot tell them).
 * A String's text is its value array's (char[], or byte[] Latin-1 unless
 * coder is 1, UTF-16 little-endian as HotSpot writes it), escaped; over
 * 120 characters it is hashed. With --contents, every primitive array's bytes are hashed
 * too (for two outputs of one shrink mode; a plain conversion zeroes them).
 *
 * Memory: the objects' ids are sorted in one long[] (8 bytes per object)
 * and each object is read back by id as it is printed; classes and roots
 * are sorted as lines. The library keeps its indexes in NAME.hwcache
 * beside the dump, keyed by file name: HeapView removes it before loading
 * (a stale one belongs to another file of that name) and after.
 *
 * Exits 1 with the library's exception when the file does not load.
 */
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.GCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

public class HeapView {
    static final int TEXT_MAX = 120;

    public static void main(String[] args) throws Exception {
        boolean contents = args.length == 2 && args[0].equals("--contents");
        if (args.length != 1 && !contents) {
            System.err.println("usage: HeapView [--contents] FILE.hprof");
            System.exit(2);
        }
        File file = new File(args[args.length - 1]);
        File cache = new File(file.getAbsoluteFile().getParentFile(), file.getName() + ".hwcache");
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        try {
            removeTree(cache);
            Heap heap = HeapFactory.createHeap(file);
            new HeapView(heap, out, contents).print();
            out.flush();
        } catch (Exception e) {
            out.flush();
            System.err.println("HeapView: " + file + ": " + e);
            System.exit(1);
        } finally {
            removeTree(cache);
        }
    }

    static void removeTree(File f) {
        File[] children = f.listFiles();
        if (children != null)
            for (File c : children)
                removeTree(c);
        f.delete();
    }

    final Heap heap;
    final Writer out;
    final boolean contents;
    final ArrayReader arrays = new ArrayReader();

    HeapView(Heap heap, Writer out, boolean contents) {
        this.heap = heap;
        this.out = out;
        this.contents = contents;
    }

    void print() throws Exception {
        long[] ids = objectIds();
        List<JavaClass> classes = heap.getAllClasses();
        List<String> roots = rootLines();
        out.write("dump classes=" + classes.size() + " objects=" + ids.length
                  + " roots=" + roots.size() + "\n");
        printClasses(classes);
        for (String r : roots)
            out.write(r);
        for (long id : ids)
            printObject(heap.getInstanceByID(id), id);
    }

    long[] objectIds() {
        long[] ids = new long[1024];
        int n = 0;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext();) {
            long id = it.next().getInstanceId();
            // Class objects are on their class lines; the iterator gives
            // some of them, or none, depending on the record order.
            if (heap.getJavaClassByID(id) != null)
                continue;
            if (n == ids.length)
                ids = Arrays.copyOf(ids, n * 2);
            ids[n++] = id;
        }
        ids = Arrays.copyOf(ids, n);
        Arrays.sort(ids);
        return ids;
    }

    List<String> rootLines() {
        List<String> lines = new ArrayList<>();
        for (GCRoot r : heap.getGCRoots())
            lines.add("root " + r.getKind() + " " + rootId(r) + "\n");
        lines.sort(null);
        return lines;
    }

    /* The id a root names, also when the dump lacks that object. */
    String rootId(GCRoot r) {
        try {
            if (arrays.rootId != null && arrays.rootId.getDeclaringClass().isInstance(r))
                return hex((Long) arrays.rootId.invoke(r));
        } catch (ReflectiveOperationException e) {
            // the public interface below
        }
        Instance i = r.getInstance();
        return i == null ? "@?" : hex(i.getInstanceId());
    }

    void printClasses(List<JavaClass> classes) throws IOException {
        List<JavaClass> sorted = new ArrayList<>(classes);
        sorted.sort((a, b) -> {
            int c = a.getName().compareTo(b.getName());
            return c != 0 ? c : Long.compare(a.getJavaClassId(), b.getJavaClassId());
        });
        for (JavaClass c : sorted) {
            JavaClass sup = c.getSuperClass();
            Instance loader = c.getClassLoader();
            out.write("class " + c.getName() + " " + hex(c.getJavaClassId())
                      + " super=" + (sup == null ? "-" : sup.getName())
                      + " loader=" + (loader == null ? "-" : hex(loader.getInstanceId()))
                      + " instances=" + c.getInstancesCount() + " size=" + size(c::getInstanceSize) + "\n");
            for (FieldValue v : c.getStaticFieldValues())
                out.write("static " + hex(c.getJavaClassId()) + " " + c.getName() + "." + v.getField().getName()
                          + value(v) + "\n");
        }
    }

    void printObject(Instance i, long id) throws Exception {
        String at = hex(id);
        JavaClass c = i.getJavaClass();
        String name = c == null ? "?" : c.getName();
        out.write("obj " + at + " " + name + " size=" + size(i::getSize) + "\n");
        if (i instanceof PrimitiveArrayInstance) {
            PrimitiveArrayInstance a = (PrimitiveArrayInstance) i;
            out.write(".  " + at + " array " + name + " length=" + a.getLength()
                      + (contents ? " md5=" + md5(arrays.bytes(a)) : "") + "\n");
        } else if (i instanceof ObjectArrayInstance) {
            long[] targets = arrays.ids((ObjectArrayInstance) i);
            for (int k = 0; k < targets.length; k++)
                if (targets[k] != 0)
                    out.write(".  " + at + " [" + k + "] -> " + hex(targets[k]) + "\n");
        } else {
            for (FieldValue v : i.getFieldValues())
                out.write(".  " + at + " " + v.getField().getDeclaringClass().getName() + "."
                          + v.getField().getName() + value(v) + "\n");
            if (name.equals("java.lang.String"))
                out.write(".  " + at + " text " + text(i) + "\n");
        }
    }

    /*
     * VisualVM sizes an object of a dump with 8-byte ids from the runtime's
     * system properties, and throws where the dump has none (a generated
     * one): sizes are then "?", all of them, as the first size asked for
     * (a class's, in sorted order) fails.
     */
    boolean sized = true;

    String size(java.util.function.LongSupplier size) {
        if (sized) {
            try {
                return Long.toString(size.getAsLong());
            } catch (RuntimeException e) {
                sized = false;
            }
        }
        return "?";
    }

    static String value(FieldValue v) {
        if (v instanceof ObjectFieldValue)
            return " -> " + hex(Long.parseLong(v.getValue()));
        return " = " + escape(v.getValue());
    }

    /* The text of a String's value array, quoted, or its length and hash. */
    String text(Instance s) throws Exception {
        Object value = s.getValueOfField("value");
        if (!(value instanceof PrimitiveArrayInstance))
            return "none";
        PrimitiveArrayInstance a = (PrimitiveArrayInstance) value;
        String text;
        if (a.getJavaClass().getName().equals("char[]")) {
            StringBuilder b = new StringBuilder();
            for (String ch : a.getValues())
                b.append(ch);
            text = b.toString();
        } else {
            byte[] bytes = arrays.bytes(a);
            Object coder = s.getValueOfField("coder");
            boolean utf16 = coder != null && coder.toString().equals("1");
            text = new String(bytes, utf16 ? StandardCharsets.UTF_16LE : StandardCharsets.ISO_8859_1);
        }
        if (text.length() > TEXT_MAX)
            return "length=" + text.length() + " md5=" + md5(text.getBytes(StandardCharsets.UTF_8));
        return "\"" + escape(text) + "\"";
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder();
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\')
                b.append('\\').append(ch);
            else if (ch < 0x20 || ch > 0x7e)
                b.append(String.format("\\u%04x", (int) ch));
            else
                b.append(ch);
        }
        return b.toString();
    }

    static String hex(long id) {
        return "@" + Long.toHexString(id);
    }

    static String md5(byte[] bytes) throws Exception {
        StringBuilder hex = new StringBuilder();
        for (byte b : MessageDigest.getInstance("MD5").digest(bytes))
            hex.append(String.format("%02x", b));
        return hex.toString();
    }

    /*
     * What the public interface hides: an object array's element ids and
     * the id a root names (the interface gives null for an object missing
     * from the dump) and a primitive array's bytes (it gives one String
     * per element). Read
     * through the library's package-private methods; where they are not
     * there, the public interface is used instead.
     */
    static final class ArrayReader {
        Field listBuffer, listOffset, listIdSize, arrayClass;
        Method bufferGetId, bufferGetBytes, classBuffer, arrayStart, rootId;

        ArrayReader() {
            try {
                Class<?> list = Class.forName("org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayLazyList");
                listBuffer = accessible(list.getDeclaredField("dumpBuffer"));
                listOffset = accessible(list.getDeclaredField("offset"));
                listIdSize = accessible(list.getDeclaredField("idSize"));
                Class<?> buffer = Class.forName("org.graalvm.visualvm.lib.jfluid.heap.HprofByteBuffer");
                bufferGetId = accessible(buffer.getDeclaredMethod("getID", long.class));
            } catch (ReflectiveOperationException | RuntimeException e) {
                listBuffer = null;
            }
            try {
                String pkg = "org.graalvm.visualvm.lib.jfluid.heap.";
                Class<?> prim = Class.forName(pkg + "PrimitiveArrayDump");
                arrayStart = accessible(prim.getDeclaredMethod("getArrayStartOffset"));
                arrayClass = accessible(Class.forName(pkg + "InstanceDump").getDeclaredField("dumpClass"));
                classBuffer = accessible(Class.forName(pkg + "ClassDump").getDeclaredMethod("getHprofBuffer"));
                bufferGetBytes = accessible(Class.forName(pkg + "HprofByteBuffer")
                                            .getDeclaredMethod("get", long.class, byte[].class));
            } catch (ReflectiveOperationException | RuntimeException e) {
                arrayStart = null;
            }
            try {
                rootId = accessible(Class.forName("org.graalvm.visualvm.lib.jfluid.heap.HprofGCRoot")
                                    .getDeclaredMethod("getInstanceId"));
            } catch (ReflectiveOperationException | RuntimeException e) {
                rootId = null;
            }
        }

        static <T extends java.lang.reflect.AccessibleObject> T accessible(T member) {
            member.setAccessible(true);
            return member;
        }

        long[] ids(ObjectArrayInstance a) throws Exception {
            List<Instance> values = a.getValues();
            long[] ids = new long[values.size()];
            if (listBuffer != null && listBuffer.getDeclaringClass().isInstance(values)) {
                Object buffer = listBuffer.get(values);
                long offset = listOffset.getLong(values);
                int idSize = listIdSize.getInt(values);
                for (int k = 0; k < ids.length; k++)
                    ids[k] = (Long) bufferGetId.invoke(buffer, offset + (long) k * idSize);
                return ids;
            }
            for (int k = 0; k < ids.length; k++) {
                Instance t = values.get(k);
                ids[k] = t == null ? 0 : t.getInstanceId();
            }
            return ids;
        }

        static int elementSize(String arrayClass) {
            switch (arrayClass) {
            case "boolean[]": case "byte[]": return 1;
            case "char[]": case "short[]": return 2;
            case "int[]": case "float[]": return 4;
            default: return 8;
            }
        }

        byte[] bytes(PrimitiveArrayInstance a) throws Exception {
            if (arrayStart != null && arrayStart.getDeclaringClass().isInstance(a)) {
                byte[] bytes = new byte[a.getLength() * elementSize(a.getJavaClass().getName())];
                Object buffer = classBuffer.invoke(arrayClass.get(a));
                bufferGetBytes.invoke(buffer, (Long) arrayStart.invoke(a), bytes);
                return bytes;
            }
            StringBuilder b = new StringBuilder();
            for (String v : a.getValues())
                b.append(v).append(',');
            return b.toString().getBytes(StandardCharsets.UTF_8);
        }
    }
}
