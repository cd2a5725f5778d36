/*
 * ObjectRichHeap - an object-rich heap for tools/bench.sh: about TARGET_MB
 * live, four to five heap records per KB of its dump (BenchHeap's has fewer,
 * larger records), prints "ready" and waits to be dumped.
 *
 * The mix: customers in a HashMap and an ArrayList, each with Strings
 * (compact Latin-1, one in eight UTF-16), boxed numbers, an ArrayList of
 * tags, a HashMap of attributes, a LinkedList of events with small byte[]
 * payloads and an int[] history; and a few hundred Bitmaps (the stub in
 * tools/java/android), one in four of whose pixel buffers is a byte-identical
 * copy of another's.  Deterministic (seeded), so a size makes the same heap.
 */
import android.graphics.Bitmap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;

public class ObjectRichHeap {
    static final class Event {
        final long at;
        final String kind;
        final Integer code;
        final byte[] payload;

        Event(long at, String kind, Integer code, byte[] payload) {
            this.at = at;
            this.kind = kind;
            this.code = code;
            this.payload = payload;
        }
    }

    static final class Customer {
        final long id;
        final String name;
        final String email;
        final String note;
        final Integer age;
        final Double balance;
        final List<String> tags = new ArrayList<>();
        final Map<String, Object> attributes = new HashMap<>();
        final LinkedList<Event> events = new LinkedList<>();
        final int[] history;
        Customer referrer;

        Customer(long id, String name, String email, String note, Integer age, Double balance,
                 int[] history) {
            this.id = id;
            this.name = name;
            this.email = email;
            this.note = note;
            this.age = age;
            this.balance = balance;
            this.history = history;
        }
    }

    static final String[] KINDS = { "login", "logout", "purchase", "refund", "view", "search" };
    static final String[] TAGS = { "gold", "silver", "new", "churn-risk", "beta", "mobile" };
    static final String LATIN1 = "abcdefghijklmnopqrstuvwxyz0123456789 -_.";
    static final String UTF16 = "\u0430\u0431\u0432\u0433\u0434\u4e2d\u6587\u65e5\u672c\u8a9e";
    static final int[][] DIMS = { { 48, 48 }, { 96, 96 }, { 128, 128 }, { 256, 256 },
                                  { 320, 240 }, { 512, 384 } };
    static final List<Object> KEEP = new ArrayList<>();

    static String text(Random random, String alphabet, int length) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++)
            sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
        return sb.toString();
    }

    /* Pixels that look like an image: a gradient and a little noise. */
    static byte[] pixels(int w, int h, Random random) {
        byte[] px = new byte[w * h * 4];
        int tint = random.nextInt(256);
        for (int p = 0; p < w * h; p++) {
            px[4 * p] = (byte) (p / w * 255 / h + tint);
            px[4 * p + 1] = (byte) (p % w * 255 / w + random.nextInt(4));
            px[4 * p + 2] = (byte) tint;
            px[4 * p + 3] = (byte) 0xFF;
        }
        return px;
    }

    static Customer customer(long n, Random random) {
        String name = "customer-" + n + "-" + Long.toHexString(random.nextLong());
        String email = n % 8 == 0 ? text(random, UTF16, 6 + random.nextInt(12)) + "@example.org"
                                  : "c" + n + "@example.org";
        String note = text(random, LATIN1, 40 + random.nextInt(800));
        int[] history = new int[64 + random.nextInt(960)];
        for (int i = 0; i < history.length; i += 3)
            history[i] = random.nextInt();
        Customer c = new Customer(n, name, email, note, Integer.valueOf(1000 + random.nextInt(100000)),
                                  Double.valueOf(random.nextDouble() * 1e4), history);
        for (int i = 1 + random.nextInt(5); i > 0; i--)
            c.tags.add(random.nextBoolean() ? TAGS[random.nextInt(TAGS.length)]
                                            : "tag-" + random.nextInt(100000));
        for (int i = 2 + random.nextInt(6); i > 0; i--) {
            String key = "attr-" + random.nextInt(50);
            Object value = switch (random.nextInt(3)) {
                case 0 -> Long.valueOf(random.nextLong());
                case 1 -> Integer.valueOf(128 + random.nextInt(1 << 20));
                default -> text(random, LATIN1, 4 + random.nextInt(24));
            };
            c.attributes.put(key, value);
        }
        for (int i = 1 + random.nextInt(5); i > 0; i--) {
            byte[] payload = null;
            if (random.nextInt(3) != 0) {
                payload = new byte[256 + random.nextInt(3840)];
                if (random.nextInt(4) == 0)
                    random.nextBytes(payload);
                else
                    payload[0] = (byte) n;
            }
            c.events.add(new Event(n * 1000 + i, KINDS[random.nextInt(KINDS.length)],
                                   Integer.valueOf(200 + random.nextInt(400)), payload));
        }
        return c;
    }

    public static void main(String[] args) throws Exception {
        long targetMb = Long.parseLong(args[0]);
        long target = targetMb << 20;
        Random random = new Random(42);
        Runtime rt = Runtime.getRuntime();

        // A few hundred Bitmaps, about a tenth of the heap at 300 MB.
        int nBitmaps = (int) (200 + targetMb / 10);
        byte[][] last = new byte[DIMS.length][];
        for (int i = 0; i < nBitmaps; i++) {
            int k = random.nextInt(DIMS.length);
            int w = DIMS[k][0], h = DIMS[k][1];
            byte[] buffer = i % 4 == 3 && last[k] != null ? last[k].clone() : pixels(w, h, random);
            last[k] = buffer;
            KEEP.add(new Bitmap(w, h, buffer, false, 0x7f000000L + 64L * i));
        }

        Map<String, Customer> index = new HashMap<>();
        List<Customer> all = new ArrayList<>();
        long n = 0;
        while (rt.totalMemory() - rt.freeMemory() < target) {
            for (int i = 0; i < 1000; i++, n++) {
                Customer c = customer(n, random);
                if (n > 0)
                    c.referrer = all.get(random.nextInt(all.size()));
                all.add(c);
                index.put(c.name, c);
            }
        }
        KEEP.add(index);
        KEEP.add(all);
        System.out.println("ready " + n + " customers, " + nBitmaps + " bitmaps");
        System.out.flush();
        Thread.sleep(3_600_000);
    }
}
