// Reads a gzip file with java.util.zip.GZIPInputStream (the reader of the
// Netflix and Spring Eureka clients) and prints the length and the CRC-32
// of what it inflated. Run as a source-file program: java GunzipCheck.java FILE
import java.io.FileInputStream;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.GZIPInputStream;

public class GunzipCheck {
    public static void main(String[] args) throws Exception {
        CRC32 crc = new CRC32();
        long n = 0;
        try (InputStream in = new GZIPInputStream(new FileInputStream(args[0]), 8192)) {
            byte[] buf = new byte[65536];
            int r;
            while ((r = in.read(buf)) > 0) {
                crc.update(buf, 0, r);
                n += r;
            }
        }
        System.out.println(n + " " + Long.toHexString(crc.getValue()));
    }
}
