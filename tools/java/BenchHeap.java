/*
 * BenchHeap - fill the heap with a realistic mix of objects until about
 * TARGET_MB are live, print "ready" and wait to be dumped (tools/bench.sh).
 * The mix, by bytes: about half primitive-array contents (byte[] buffers of
 * 1-64 KiB, int[] and long[] tables), the rest many small objects: Strings,
 * HashMap entries, list nodes with a few fields.
 */
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public class BenchHeap {
    static final class Item {
        final long id;
        final String name;
        final int[] counters;
        Item next;
        double weight;

        Item(long id, String name, int[] counters) {
            this.id = id;
            this.name = name;
            this.counters = counters;
        }
    }

    static final List<Object> KEEP = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        long target = Long.parseLong(args[0]) << 20;
        Random random = new Random(42);
        Runtime rt = Runtime.getRuntime();
        Map<String, Item> index = new HashMap<>();
        Item head = null;
        long n = 0;
        while (rt.totalMemory() - rt.freeMemory() < target) {
            for (int i = 0; i < 1000; i++, n++) {
                String name = "item-" + n + "-" + Long.toHexString(random.nextLong());
                Item it = new Item(n, name, new int[4 + random.nextInt(12)]);
                it.weight = random.nextDouble();
                it.next = head;
                head = it;
                if (n % 4 == 0)
                    index.put(name, it);
                if (n % 25 == 0) {
                    byte[] buffer = new byte[1024 + random.nextInt(64 * 1024)];
                    random.nextBytes(buffer);
                    KEEP.add(buffer);
                }
                if (n % 200 == 0)
                    KEEP.add(new long[256 + random.nextInt(2048)]);
            }
        }
        KEEP.add(head);
        KEEP.add(index);
        System.out.println("ready " + n);
        System.out.flush();
        Thread.sleep(3_600_000);
    }
}
