package android.graphics;

/* The fields of Android's Bitmap before Android 8 that hprof-shrink looks
 * at (mBuffer holds the pixels), for BitmapHeap's HotSpot dumps. */
public final class Bitmap {
    public int mWidth;
    public int mHeight;
    public byte[] mBuffer;
    public boolean mRecycled;
    public long mNativePtr;

    public Bitmap(int width, int height, byte[] buffer, boolean recycled, long nativePtr) {
        mWidth = width;
        mHeight = height;
        mBuffer = buffer;
        mRecycled = recycled;
        mNativePtr = nativePtr;
    }
}
