package android.location;

/* The fields of Android's Location that hold where the user is, for
 * SecretPlanter's HotSpot dump. */
public final class Location {
    public final String mProvider;
    public long mTime;
    public double mLatitude;
    public double mLongitude;
    public float mAccuracy;

    public Location(String provider, double latitude, double longitude) {
        mProvider = provider;
        mLatitude = latitude;
        mLongitude = longitude;
    }
}
