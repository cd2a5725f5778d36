/*
 * FixtureApp - a small Java program whose heap dump is a HotSpot fixture.
 * It holds a known population (see the counts printed on start), prints
 * "ready" and waits to be dumped with jcmd (tools/make-hotspot-fixture.sh).
 */
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class FixtureApp {
    static class Node {
        final int id;
        final String name;
        final byte[] payload;
        Node next;

        Node(int id, String name, byte[] payload) {
            this.id = id;
            this.name = name;
            this.payload = payload;
        }
    }

    static class Leaf extends Node {
        final double score;
        final char[] tag;

        Leaf(int id, String name, byte[] payload, double score) {
            super(id, name, payload);
            this.score = score;
            this.tag = ("leaf-" + id).toCharArray();
        }
    }

    static final List<Object> KEEP = new ArrayList<>();
    static final Map<String, int[]> TABLE = new HashMap<>();
    static final String LATIN1 = "plain latin-1 text";
    static final String UTF16 = "na\u00efve caf\u00e9 \u2615 \ud834\udd1e";

    public static void main(String[] args) throws Exception {
        Node head = null;
        for (int i = 0; i < 500; i++) {
            byte[] payload = new byte[256 + (i * 37) % 1024];
            for (int k = 0; k < payload.length; k++)
                payload[k] = (byte) (k * 31 + i);
            Node n = (i % 3 == 2) ? new Leaf(i, "node-" + i, payload, i * 0.5)
                                  : new Node(i, "node-" + i, payload);
            n.next = head;
            head = n;
        }
        KEEP.add(head);
        for (int i = 0; i < 200; i++)
            TABLE.put("key-" + i, new int[i % 50 + 1]);
        KEEP.add(TABLE);
        KEEP.add(new long[] { 1, 2, 3 });
        KEEP.add(new double[] { Math.PI, Math.E });
        KEEP.add(new String[] { LATIN1, UTF16 });
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(600_000);
    }
}
