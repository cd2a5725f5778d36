/*
 * LeakApp - a heap that reads as a LeakCanary dump, for the leak-analysis
 * test (tests/java/LeakAnalysis.java, tests/cli-tests.sh).  It holds:
 *
 * - an Activity leaked through a static list of listeners, watched by a
 *   LeakCanary 2 KeyedWeakReference and retained;
 * - a Fragment leaked through a static HashMap, watched by a LeakCanary 1.x
 *   KeyedWeakReference;
 * - a watched Activity not yet retained (retainedUptimeMillis -1) and a
 *   watched object already collected (referent null): neither is a leak;
 * - parts of the leaked Activity also held in the locals of the threads
 *   whose locals Shark ignores (main, FinalizerWatchdogDaemon,
 *   LeakCanary-Heap-Dump), so that they count as retained by the leak only
 *   while those threads are known by their names; and a thread of another
 *   name whose locals are followed;
 * - android.os.Build and Build.VERSION statics.
 *
 * It prints "ready" and waits to be dumped with jcmd.
 */
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.SynchronousQueue;

import leakcanary.KeyedWeakReference;

public class LeakApp {
    static class View {
        final String label;
        final int[] bounds = new int[4];
        View[] children = new View[0];

        View(String label) {
            this.label = label;
        }
    }

    static class Resources {
        final String[] names;
        final int[] ids;

        Resources(int n) {
            names = new String[n];
            ids = new int[n];
            for (int i = 0; i < n; i++) {
                names[i] = "resource-name-" + i;
                ids[i] = 0x7f010000 + i;
            }
        }
    }

    static class Fragment {
        final String mTag;
        Activity mHost;
        View mView;

        Fragment(String tag, int views) {
            mTag = tag;
            mView = tree(tag, views);
        }
    }

    static class Activity {
        final String mTitle;
        final View mDecor;
        final Resources mResources;
        final List<Fragment> mFragments = new ArrayList<>();
        final Map<String, String> mSavedState = new HashMap<>();
        final byte[] mCache = new byte[4096];
        boolean mDestroyed;

        Activity(String title, int views) {
            mTitle = title;
            mDecor = tree(title + "-decor", views);
            mResources = new Resources(40);
            for (int i = 0; i < 3; i++)
                mFragments.add(new Fragment(title + "-fragment-" + i, 12));
            for (int i = 0; i < 10; i++)
                mSavedState.put("state-key-" + i, "state-value-" + i);
        }
    }

    static class Listener {
        final Activity activity;

        Listener(Activity activity) {
            this.activity = activity;
        }
    }

    static final List<Listener> LISTENERS = new ArrayList<>();
    static final Map<String, Object> REGISTRY = new HashMap<>();
    static final Map<String, Object> WATCHED_OBJECTS = new HashMap<>();
    static Activity resumedActivity;
    static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    static final CountDownLatch DUMPED = new CountDownLatch(1);

    /** A tree of n views, each parent holding up to 4 children. */
    static View tree(String name, int n) {
        List<View> all = new ArrayList<>();
        View root = new View(name + "-0");
        all.add(root);
        for (int i = 1; i < n; i++) {
            View v = new View(name + "-" + i);
            View parent = all.get((i - 1) / 4);
            View[] kids = new View[parent.children.length + 1];
            System.arraycopy(parent.children, 0, kids, 0, parent.children.length);
            kids[kids.length - 1] = v;
            parent.children = kids;
            all.add(v);
        }
        return root;
    }

    /**
     * A thread that holds obj in a local of its frame until the dump is
     * taken. The object is handed over through a queue, so that no field of
     * the thread refers to it.
     */
    static void holder(String threadName, Object obj) throws InterruptedException {
        SynchronousQueue<Object> handOver = new SynchronousQueue<>();
        Thread t = new Thread(threadName) {
            @Override
            public void run() {
                Object local;
                try {
                    local = handOver.take();
                    DUMPED.await();
                } catch (InterruptedException e) {
                    return;
                }
                System.out.println(threadName + " held " + local.getClass().getName());
            }
        };
        t.setDaemon(true);
        t.start();
        handOver.put(obj);
    }

    static void watch(Object o, String key, String description, long watched, long retained) {
        KeyedWeakReference ref = new KeyedWeakReference(o, key, description, watched, QUEUE);
        ref.retainedUptimeMillis = retained;
        WATCHED_OBJECTS.put(key, ref);
    }

    /** Sets the heap up and returns what main keeps in a local. */
    static View setUp() throws InterruptedException {
        Activity leaked = new Activity("CheckoutActivity", 60);
        leaked.mDestroyed = true;
        LISTENERS.add(new Listener(leaked));
        watch(leaked, "3f7c2a9e-1b4d-4c8e-9a6f-2d5e8b1c0a47",
              "CheckoutActivity received Activity#onDestroy() callback", 1200, 6200);

        Fragment fragment = new Fragment("DetailFragment", 20);
        fragment.mHost = leaked;
        REGISTRY.put("detail", fragment);
        WATCHED_OBJECTS.put("legacy", com.squareup.leakcanary.KeyedWeakReference.watch(
            fragment, "8a1e5d3c-6f2b-4e9a-b7c4-1d0f3e6a9b25", "DetailFragment", QUEUE));

        resumedActivity = new Activity("ResumedActivity", 8);
        watch(resumedActivity, "c4b9e2f1-7a3d-4f6b-8e1c-5a2d9f0b7e63",
              "ResumedActivity received Activity#onDestroy() callback", 8000, -1);
        watch(new Activity("CollectedActivity", 4), "e6d1a8b3-2c5f-4a9e-b0d7-3f8c1e4a6b92",
              "CollectedActivity received Activity#onDestroy() callback", 500, 5500);

        holder("FinalizerWatchdogDaemon", leaked.mResources);
        holder("LeakCanary-Heap-Dump", leaked.mFragments);
        holder("worker-7f3a", leaked.mSavedState);
        KeyedWeakReference.heapDumpUptimeMillis = 9000;
        // LeakCanary reads Build at start-up; so the class is loaded and dumped
        System.out.println("device " + android.os.Build.MANUFACTURER + " " + android.os.Build.ID
                           + " SDK " + android.os.Build.VERSION.SDK_INT);
        return leaked.mDecor;
    }

    public static void main(String[] args) throws Exception {
        View decor = setUp();
        System.gc();
        System.out.println("ready");
        System.out.flush();
        DUMPED.await();
        System.out.println("main held " + decor.label);
    }
}
