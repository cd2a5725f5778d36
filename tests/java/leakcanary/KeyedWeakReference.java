package leakcanary;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;

/* The fields of LeakCanary 2's KeyedWeakReference that Shark reads (key,
 * watchUptimeMillis, retainedUptimeMillis) and the free-text description
 * apps fill in, for SecretPlanter's HotSpot dump. */
public final class KeyedWeakReference extends WeakReference<Object> {
    public final String key;
    public final String description;
    public final long watchUptimeMillis;
    public volatile long retainedUptimeMillis;

    public KeyedWeakReference(Object referent, String key, String description,
                              long watchUptimeMillis, ReferenceQueue<Object> queue) {
        super(referent, queue);
        this.key = key;
        this.description = description;
        this.watchUptimeMillis = watchUptimeMillis;
        this.retainedUptimeMillis = -1L;
    }
}
