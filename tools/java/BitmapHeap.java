/*
 * BitmapHeap - a bitmap-heavy heap for tools/bench.sh: about TARGET_MB
 * live, a bit over half of it pixels in android.graphics.Bitmap objects,
 * the rest BenchHeap's mix of ordinary objects, Strings and arrays; prints
 * "ready" and waits to be dumped.  Of every ten Bitmaps: four own unique
 * pixels, two a byte-identical copy in an array of their own, one shares
 * another Bitmap's array, one has no buffer, one is recycled, one is all
 * zeros; sizes from 1x1 to 1440x2560 (4 bytes a pixel), mostly small ones
 * by count and large ones by bytes.  Deterministic (seeded).
 */
import android.graphics.Bitmap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public class BitmapHeap {
    static final int[][] DIMS = { { 1, 1 }, { 48, 48 }, { 96, 96 }, { 256, 256 }, { 512, 384 },
                                  { 1080, 1920 }, { 1440, 2560 } };
    static final List<Object> KEEP = new ArrayList<>();

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

    /* Pixels that look like an image: gradients and a little noise. */
    static byte[] pixels(int w, int h, long seed) {
        byte[] px = new byte[w * h * 4];
        Random noise = new Random(seed);
        for (int p = 0; p < w * h; p++) {
            int row = p / w, col = p % w;
            px[4 * p] = (byte) (row * 255 / h + seed * 37 + noise.nextInt(4));
            px[4 * p + 1] = (byte) (col * 255 / w + seed * 11);
            px[4 * p + 2] = (byte) ((row + col) / 3 + seed);
            px[4 * p + 3] = (byte) 0xFF;
        }
        return px;
    }

    public static void main(String[] args) throws Exception {
        long target = Long.parseLong(args[0]) << 20;
        long pixelTarget = target * 55 / 100;
        Random random = new Random(42);
        Runtime rt = Runtime.getRuntime();
        byte[][] lastArray = new byte[DIMS.length][];
        long seed = 1000, pixelBytes = 0;
        int nBitmaps = 0;
        for (long i = 0; pixelBytes < pixelTarget; i++) {
            int r = random.nextInt(100);
            int k = r < 5 ? 0 : r < 30 ? 1 : r < 50 ? 2 : r < 70 ? 3 : r < 85 ? 4 : r < 95 ? 5 : 6;
            int w = DIMS[k][0], h = DIMS[k][1];
            int kind = (int) (i % 10);
            byte[] buffer;
            if (kind == 7) {
                buffer = null;
            } else if (kind == 6 && lastArray[k] != null) {
                buffer = lastArray[k];
            } else if ((kind == 4 || kind == 5) && lastArray[k] != null) {
                buffer = lastArray[k].clone();
                pixelBytes += buffer.length;
            } else if (kind == 9) {
                buffer = new byte[w * h * 4];
                pixelBytes += buffer.length;
            } else {
                buffer = pixels(w, h, ++seed);
                lastArray[k] = buffer;
                pixelBytes += buffer.length;
            }
            KEEP.add(new Bitmap(w, h, buffer, kind == 8, 0x7f000000L + 64L * nBitmaps++));
        }
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
                    byte[] b = new byte[1024 + random.nextInt(64 * 1024)];
                    random.nextBytes(b);
                    KEEP.add(b);
                }
                if (n % 200 == 0)
                    KEEP.add(new long[256 + random.nextInt(2048)]);
            }
        }
        KEEP.add(head);
        KEEP.add(index);
        System.out.println("ready " + n + " objects, " + nBitmaps + " bitmaps, " + pixelBytes
                           + " bytes of pixels");
        System.out.flush();
        Thread.sleep(3_600_000);
    }
}
