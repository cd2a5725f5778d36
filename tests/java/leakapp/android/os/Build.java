package android.os;

/**
 * The statics of android.os.Build that Shark reads as the dump's metadata.
 * Set at run time so that they are fields of the class, not inlined literals.
 */
public class Build {
    public static final String MANUFACTURER = String.valueOf("Fairphone-LeakApp");
    public static final String ID = String.valueOf("UQ1A.240205.004");
    public static final String MODEL = String.valueOf("FP5");

    public static class VERSION {
        public static final int SDK_INT = Integer.parseInt("34");
        public static final String RELEASE = String.valueOf("14");
    }
}
