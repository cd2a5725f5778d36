/*
 * HeapCount - load a heap dump with VisualVM's heap library (Debian package
 * visualvm) and print what it sees, so tests can prove that our output opens
 * in a real analyzer and tells the same story as the input:
 *
 *   classes N / instances N / roots N / class NAME COUNT (sorted by name)
 *
 * Exits 1 with the library's exception when the file does not load.
 */
import java.io.File;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;

import org.graalvm.visualvm.lib.jfluid.heap.GCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;

public class HeapCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: HeapCount FILE.hprof");
            System.exit(2);
        }
        try {
            count(HeapFactory.createHeap(new File(args[0])));
        } catch (Exception e) {
            System.err.println("HeapCount: " + args[0] + ": " + e);
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
}
