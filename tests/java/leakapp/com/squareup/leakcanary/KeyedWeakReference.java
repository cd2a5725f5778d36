package com.squareup.leakcanary;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;

/** LeakCanary 1.x's KeyedWeakReference: a key and a name, nothing else. */
public final class KeyedWeakReference extends WeakReference<Object> {
    public final String key;
    public final String name;

    KeyedWeakReference(Object referent, String key, String name, ReferenceQueue<Object> queue) {
        super(referent, queue);
        this.key = key;
        this.name = name;
    }

    /** The 1.x RefWatcher's watch(), which the test app calls. */
    public static Object watch(Object referent, String key, String name, ReferenceQueue<Object> queue) {
        return new KeyedWeakReference(referent, key, name, queue);
    }
}
