/*
 * RetainedSizes - load a heap dump with VisualVM's heap library and print
 * the retained size it computes for every object (instances and arrays):
 *
 *   ID RETAINED     (ID in hex, sorted by id)
 *
 * Two dumps of one heap are compared on the ids they share, to prove that
 * a shrink leaves the dominators of the objects it keeps as they were.
 *
 * Exits 1 with the library's exception when the file does not load.
 */
import java.io.File;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;

public class RetainedSizes {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RetainedSizes FILE.hprof");
            System.exit(2);
        }
        try {
            Heap heap = HeapFactory.createHeap(new File(args[0]));
            Map<Long, Long> retained = new TreeMap<>();
            for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext();) {
                Instance i = it.next();
                retained.put(i.getInstanceId(), i.getRetainedSize());
            }
            StringBuilder out = new StringBuilder();
            for (Map.Entry<Long, Long> e : retained.entrySet())
                out.append(Long.toHexString(e.getKey())).append(' ').append(e.getValue()).append('\n');
            System.out.print(out);
        } catch (Exception e) {
            System.err.println("RetainedSizes: " + args[0] + ": " + e);
            System.exit(1);
        }
    }
}
