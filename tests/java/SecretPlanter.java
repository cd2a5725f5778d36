/*
 * SecretPlanter OUT.hprof MANIFEST - plant unique secrets in every kind of
 * place a heap holds data, dump the heap (HotSpotDiagnosticMXBean, live
 * objects only) and write what was planted, for tests/hprof-secrets.c to
 * search the dump and its shrunk outputs for.
 *
 * Each MANIFEST line is "EXPECT KIND TYPE ARGS": EXPECT is "gone" (data that
 * --redact --redact-fields must remove) or "stays" (structure that leak
 * analysis needs); TYPE is "text TEXT" (UTF-8), "i32 HEX" or "i64 HEX" (a
 * big-endian value anywhere in the file) or "field CLASS HEX" (an instance
 * of CLASS whose field bytes hold HEX: the values too short to search the
 * whole file for, and the hash caches).
 *
 * The secrets come from one seeded generator, drawn in a fixed order, so
 * every run plants the same ones.  Texts are built at run time: only the
 * "literal" kind is a string constant of this program (and so in the
 * JVM's symbol table, which HotSpot dumps).
 */
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.ref.ReferenceQueue;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.management.HotSpotDiagnosticMXBean;

import android.location.Location;
import leakcanary.KeyedWeakReference;

public class SecretPlanter {
    static final String LITERAL = "LITERAL-7c1f0e9b2a-account-pin-of-the-user";

    static final SplittableRandom RANDOM = new SplittableRandom(0x5EC12E7L);
    static final List<String> MANIFEST = new ArrayList<>();
    /* Everything planted stays reachable from here until the dump. */
    static final List<Object> KEEP = new ArrayList<>();

    static class Customer {
        String name;
        String city;
        Object literal;
    }

    static class Prims {
        int i;
        long l;
        float f;
        double d;
        short s;
        char c;
    }

    /* A byte alone in its instance, so that its one byte can be told apart. */
    static class ByteHolder {
        byte b;
    }

    static class Statics {
        static long sLong;
        static int sInt;
        static double sDouble;
        static String sText;
    }

    record Account(String iban, long balance) {
    }

    enum Tier {
        GOLD(text("enum-text"), i32("enum-int", null));

        final String label;
        final int code;

        Tier(String label, int code) {
            this.label = label;
            this.code = code;
        }
    }

    static String hex(long value, int bytes) {
        StringBuilder b = new StringBuilder();
        for (int k = bytes - 1; k >= 0; k--)
            b.append(String.format("%02x", (value >>> (8 * k)) & 0xFF));
        return b.toString();
    }

    static void plant(String expect, String kind, String what) {
        MANIFEST.add(expect + " " + kind + " " + what);
    }

    /* A unique text: letters and digits from the generator. */
    static String text(String kind) {
        String t = "P" + Long.toString(RANDOM.nextLong() >>> 2, 36) + "q" + Long.toString(RANDOM.nextLong() >>> 2, 36);
        plant("gone", kind, "text " + t);
        return t;
    }

    /* A value with no zero byte (zeros are everywhere in a dump). */
    static long noZeroByte(long v) {
        for (int k = 0; k < 8; k++)
            if (((v >>> (8 * k)) & 0xFF) == 0)
                v |= 0x5AL << (8 * k);
        return v;
    }

    static long draw64() {
        return noZeroByte(RANDOM.nextLong());
    }

    static int i32(String kind, String cls) {
        int v = (int) draw64();
        number(kind, cls, v, 4);
        return v;
    }

    static long i64(String kind, String cls) {
        long v = draw64();
        number(kind, cls, v, 8);
        return v;
    }

    static void number(String kind, String cls, long bits, int bytes) {
        plant("gone", kind, (bytes == 4 ? "i32 " : "i64 ") + hex(bits, bytes));
        if (cls != null)
            plant("gone", kind, "field " + cls + " " + hex(bits, bytes));
    }

    static void field(String expect, String kind, String cls, long bits, int bytes) {
        plant(expect, kind, "field " + cls + " " + hex(bits, bytes));
    }

    static void plantAll() {
        Customer c = new Customer();
        c.name = text("string-field");
        /* Not Latin-1: HotSpot keeps it as UTF-16 in its native byte order */
        String utf16 = "Z\u00fcrich-\u03a9-" + Long.toString(RANDOM.nextLong() >>> 2, 36);
        plant("gone", "string-utf16", "text " + utf16);
        c.city = utf16;
        c.literal = LITERAL;
        plant("gone", "literal", "text " + LITERAL);
        KEEP.add(c);

        /* Hash caches: a String's own, and the HashMap node's of its key */
        String hashed = text("string-hash-text");
        int h = hashed.hashCode();
        field("gone", "string-hash", "java.lang.String", h, 4);
        KEEP.add(hashed);
        String pin = String.format("%04d", RANDOM.nextInt(10000));
        HashMap<String, Object> byPin = new HashMap<>();
        byPin.put(pin, c);
        int ph = pin.hashCode();
        field("gone", "pin-string-hash", "java.lang.String", ph, 4);
        field("gone", "pin-hashmap-node-hash", "java.util.HashMap$Node", ph ^ (ph >>> 16), 4);
        KEEP.add(byPin);

        /* Boxed values (outside the caches of valueOf, but Byte's) */
        int iv = i32("Integer", "java.lang.Integer");
        KEEP.add(Integer.valueOf(iv));
        long lv = i64("Long", "java.lang.Long");
        KEEP.add(Long.valueOf(lv));
        double dv = 1000 + RANDOM.nextDouble() * 1000;
        number("Double", "java.lang.Double", Double.doubleToLongBits(dv), 8);
        KEEP.add(Double.valueOf(dv));
        float fv = 1000 + RANDOM.nextInt(1 << 20) / 1024f;
        number("Float", "java.lang.Float", Float.floatToIntBits(fv), 4);
        KEEP.add(Float.valueOf(fv));
        char cv = (char) (0x4E00 + RANDOM.nextInt(0x5000));
        field("gone", "Character", "java.lang.Character", cv, 2);
        KEEP.add(Character.valueOf(cv));
        short sv = (short) (0x1000 + RANDOM.nextInt(0x6000));
        field("gone", "Short", "java.lang.Short", sv, 2);
        KEEP.add(Short.valueOf(sv));
        byte bv = (byte) (0x41 + RANDOM.nextInt(26));
        field("gone", "Byte", "java.lang.Byte", bv, 1);
        KEEP.add(Byte.valueOf(bv));

        /* JDK value objects */
        UUID uuid = new UUID(i64("UUID", "java.util.UUID"), i64("UUID", "java.util.UUID"));
        KEEP.add(uuid);
        long millis = 1_500_000_000_000L + RANDOM.nextLong(100_000_000_000L);
        number("Date.fastTime", "java.util.Date", millis, 8);
        KEEP.add(new Date(millis));
        long seconds = 1_500_000_000L + RANDOM.nextLong(100_000_000L);
        int nanos = 100_000_000 + RANDOM.nextInt(800_000_000);
        number("Instant", "java.time.Instant", seconds, 8);
        number("Instant", "java.time.Instant", nanos, 4);
        KEEP.add(Instant.ofEpochSecond(seconds, nanos));
        LocalDate birthday = LocalDate.of(1940 + RANDOM.nextInt(60), 1 + RANDOM.nextInt(12), 1 + RANDOM.nextInt(28));
        field("gone", "LocalDate", "java.time.LocalDate", birthday.getYear(), 4);
        KEEP.add(birthday);
        int timeNanos = 100_000_000 + RANDOM.nextInt(800_000_000);
        LocalDateTime appointment = LocalDateTime.of(LocalDate.of(2031, 7, 14),
                                                     LocalTime.of(9, 41, 27, timeNanos));
        number("LocalDateTime", "java.time.LocalTime", timeNanos, 4);
        KEEP.add(appointment);
        /* BigDecimal keeps a small unscaled value in intCompact, a big one in a
         * BigInteger's int[] magnitude (positive: the sign bit cleared) */
        long compact = draw64() & Long.MAX_VALUE;
        number("BigDecimal.intCompact", "java.math.BigDecimal", compact, 8);
        KEEP.add(BigDecimal.valueOf(compact, 2));
        int[] words = { (int) draw64() & Integer.MAX_VALUE, (int) draw64(), (int) draw64() };
        for (int w : words)
            number("BigDecimal-big", null, w, 4);
        BigInteger big = BigInteger.ZERO;
        for (int w : words)
            big = big.shiftLeft(32).or(BigInteger.valueOf(w & 0xFFFFFFFFL));
        KEEP.add(new BigDecimal(big, 4));
        KEEP.add(new AtomicInteger(i32("AtomicInteger", "java.util.concurrent.atomic.AtomicInteger")));
        KEEP.add(new AtomicLong(i64("AtomicLong", "java.util.concurrent.atomic.AtomicLong")));

        /* An application class's primitive fields, of each type */
        Prims p = new Prims();
        p.i = i32("field-int", "SecretPlanter$Prims");
        p.l = i64("field-long", "SecretPlanter$Prims");
        p.f = 1000 + RANDOM.nextInt(1 << 20) / 1024f;
        number("field-float", "SecretPlanter$Prims", Float.floatToIntBits(p.f), 4);
        p.d = 1000 + RANDOM.nextDouble() * 1000;
        number("field-double", "SecretPlanter$Prims", Double.doubleToLongBits(p.d), 8);
        p.s = (short) (0x1000 + RANDOM.nextInt(0x6000));
        field("gone", "field-short", "SecretPlanter$Prims", p.s, 2);
        p.c = (char) (0x4E00 + RANDOM.nextInt(0x5000));
        field("gone", "field-char", "SecretPlanter$Prims", p.c, 2);
        KEEP.add(p);
        ByteHolder bh = new ByteHolder();
        bh.b = (byte) (0x41 + RANDOM.nextInt(26));
        field("gone", "field-byte", "SecretPlanter$ByteHolder", bh.b, 1);
        KEEP.add(bh);

        /* Statics (in the class dump) */
        Statics.sLong = i64("static-long", null);
        Statics.sInt = i32("static-int", null);
        Statics.sDouble = 1000 + RANDOM.nextDouble() * 1000;
        number("static-double", null, Double.doubleToLongBits(Statics.sDouble), 8);
        Statics.sText = text("static-string");

        KEEP.add(new Account(text("record-text"), i64("record-long", "SecretPlanter$Account")));
        KEEP.add(Tier.GOLD);

        Properties props = new Properties();
        props.setProperty("db.password", text("Properties"));
        KEEP.add(props);
        StringBuilder sb = new StringBuilder();
        sb.append(text("StringBuilder"));
        KEEP.add(sb);
        ByteBuffer buf = ByteBuffer.allocate(64);
        buf.put(text("ByteBuffer-text").getBytes(StandardCharsets.ISO_8859_1));
        buf.putLong(i64("ByteBuffer-long", null));
        KEEP.add(buf);
        KEEP.add(text("char[]").toCharArray());
        KEEP.add(new int[] { 7, i32("int[]", null), 9 });
        KEEP.add(new long[] { 7, i64("long[]", null), 9 });

        /* LeakCanary: the key is what Shark matches; the description is the app's free text */
        String key = new UUID(RANDOM.nextLong(), RANDOM.nextLong()).toString();
        plant("stays", "KeyedWeakReference.key", "text " + key);
        Object watched = new Object();
        KEEP.add(watched);
        KEEP.add(new KeyedWeakReference(watched, key, text("KeyedWeakReference.description"),
                                        12345, new ReferenceQueue<>()));

        double lat = -60 + RANDOM.nextDouble() * 120, lon = -170 + RANDOM.nextDouble() * 340;
        number("Location", "android.location.Location", Double.doubleToLongBits(lat), 8);
        number("Location", "android.location.Location", Double.doubleToLongBits(lon), 8);
        KEEP.add(new Location("gps", lat, lon));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: SecretPlanter OUT.hprof MANIFEST");
            System.exit(2);
        }
        plantAll();
        CountDownLatch done = new CountDownLatch(1);
        Thread named = new Thread(() -> {
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, text("thread-name"));
        named.setDaemon(true);
        named.start();
        try (PrintWriter w = new PrintWriter(args[1], StandardCharsets.UTF_8)) {
            for (String line : MANIFEST)
                w.println(line);
        }
        MANIFEST.clear(); /* its lines hold the secrets too */
        HotSpotDiagnosticMXBean bean = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        bean.dumpHeap(args[0], true);
        done.countDown();
        named.join();
    }
}
