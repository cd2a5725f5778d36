/*
 * HeapCount - load a heap dump with VisualVM's heap library (Debian package
 * visualvm) and print what it sees, so tests can prove that our output opens
 * in a real analyzer and tells the same story as the input:
 *
 *   classes N / instances N / roots N / class NAME COUNT (sorted by name)
 *
 * With --detail, also what two dumps of one heap must share whatever their
 * records (the --jvm output against hprof-conv's):
 *
 *   root KIND COUNT (sorted by kind) / references N MD5
 *
 * where the references are every non-null object field of an instance and
 * element of an object array, as "source id, field name or [index],
 * target id" lines, sorted, their MD5 taken (a dangling target counts by
 * its id).
 *
 * Exits 1 with the library's exception when the file does not load.
 */
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;

import org.graalvm.visualvm.lib.jfluid.heap.ArrayItemValue;
import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.GCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;

public class HeapCount {
    public static void main(String[] args) throws Exception {
        boolean detail = args.length == 2 && args[0].equals("--detail");
        if (args.length != 1 && !detail) {
            System.err.println("usage: HeapCount [--detail] FILE.hprof");
            System.exit(2);
        }
        String path = args[args.length - 1];
        try {
            Heap heap = HeapFactory.createHeap(new File(path));
            count(heap);
            if (detail)
                detail(heap);
        } catch (Exception e) {
            System.err.println("HeapCount: " + path + ": " + e);
            System.exit(1);
        }
    }

    static void count(Heap heap) {
        Map<String, Integer> perClass = new TreeMap<>();
        long instances = 0;
        List<JavaClass> classes = heap.getAllClasses();
        for (JavaClass c : classes) {
            int n = c.getInstancesCount();
            instances += n;
            perClass.merge(c.getName(), n, Integer::sum);
        }
        // Walk every instance too: a broken reference or layout shows here.
        long walked = 0;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); it.next())
            walked++;
        System.out.println("classes " + classes.size());
        System.out.println("instances " + instances);
        System.out.println("walked " + walked);
        System.out.println("roots " + heap.getGCRoots().size());
        for (Map.Entry<String, Integer> e : perClass.entrySet())
            System.out.println("class " + e.getKey() + " " + e.getValue());
    }

    static void detail(Heap heap) throws Exception {
        Map<String, Integer> perKind = new TreeMap<>();
        for (GCRoot r : heap.getGCRoots())
            perKind.merge(r.getKind(), 1, Integer::sum);
        for (Map.Entry<String, Integer> e : perKind.entrySet())
            System.out.println("root " + e.getKey() + " " + e.getValue());
        List<String> refs = new ArrayList<>();
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext();) {
            Instance i = it.next();
            long id = i.getInstanceId();
            if (i instanceof ObjectArrayInstance) {
                for (ArrayItemValue v : ((ObjectArrayInstance) i).getItems())
                    if (v.getInstance() != null)
                        refs.add(id + " [" + v.getIndex() + "] " + v.getInstance().getInstanceId());
                continue;
            }
            for (FieldValue v : i.getFieldValues())
                if (v instanceof ObjectFieldValue && !"0".equals(v.getValue()))
                    refs.add(id + " " + v.getField().getName() + " " + v.getValue());
        }
        refs.sort(null);
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        for (String r : refs)
            md5.update((r + "\n").getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder();
        for (byte b : md5.digest())
            hex.append(String.format("%02x", b));
        System.out.println("references " + refs.size() + " " + hex);
    }
}
