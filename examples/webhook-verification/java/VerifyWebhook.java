import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifies one concordance-worker webhook request: its signature and its timestamp.
 *
 * <p>The scheme is Standard Webhooks' (see docs/webhook-verification.md):
 *
 * <pre>
 *   signed content = "{webhook-id}.{webhook-timestamp}." + raw body bytes
 *   key            = base64-decode(secret without its "whsec_" prefix)
 *   signature      = "v1," + base64(HMAC-SHA256(key, signed content))
 * </pre>
 *
 * A request is accepted when its timestamp is at most 5 minutes away from now (either way) and one
 * of the space-separated entries of {@code webhook-signature} is that v1 signature.
 *
 * <p>Usage (Java 17, standard library only):
 *
 * <pre>
 *   javac -d out VerifyWebhook.java
 *   WEBHOOK_SECRET=whsec_... java -cp out VerifyWebhook HEADERS_FILE BODY_FILE
 * </pre>
 *
 * HEADERS_FILE holds the request's headers, one {@code Name: value} a line (names in any case;
 * lines without a colon, such as a status line, are skipped). BODY_FILE holds the body exactly as
 * received: verify the raw bytes, never a re-serialised JSON object.
 *
 * <p>Exit status: 0 and {@code OK <webhook-id>} on standard output when the request is genuine; 1
 * and {@code REJECTED: <reason>} on standard error when it is not; 2 for a usage or configuration
 * error. In a web handler, call {@link #verify} with the request's headers and raw body, answer 401
 * when it throws {@link Rejected}, and deduplicate on the returned webhook-id (a retry has the same
 * id and a fresh timestamp and signature).
 */
public final class VerifyWebhook {
  static final long TOLERANCE_SECONDS = 5 * 60;
  static final String SECRET_PREFIX = "whsec_";

  /** The request is not a genuine, current delivery. */
  static final class Rejected extends Exception {
    private static final long serialVersionUID = 1L;

    Rejected(String reason) {
      super(reason);
    }
  }

  private VerifyWebhook() {}

  /** The HMAC key of a {@code whsec_} secret: the bytes its base64 text stands for. */
  static byte[] secretKey(String secret) {
    String text = secret.strip();
    if (text.startsWith(SECRET_PREFIX)) text = text.substring(SECRET_PREFIX.length());
    if (!text.matches("[A-Za-z0-9+/]*={0,2}")) {
      throw new IllegalArgumentException("WEBHOOK_SECRET is not base64 after its whsec_ prefix");
    }
    byte[] key;
    try {
      // With its padding or without (Java's decoder takes base64 without padding).
      key = Base64.getDecoder().decode(text.replaceAll("=+$", ""));
    } catch (IllegalArgumentException err) {
      throw new IllegalArgumentException("WEBHOOK_SECRET is not base64 after its whsec_ prefix");
    }
    if (key.length == 0) throw new IllegalArgumentException("WEBHOOK_SECRET is empty");
    return key;
  }

  /**
   * Returns the webhook-id of a genuine request; throws {@link Rejected} otherwise.
   *
   * @param headers the request's headers by lower-case name
   * @param body the raw body
   * @param now the current Unix time in seconds
   */
  static String verify(byte[] key, Map<String, String> headers, byte[] body, long now)
      throws Rejected, GeneralSecurityException {
    String msgId = headers.getOrDefault("webhook-id", "");
    String timestampText = headers.getOrDefault("webhook-timestamp", "");
    String signatures = headers.getOrDefault("webhook-signature", "");
    if (msgId.isEmpty() || timestampText.isEmpty() || signatures.isEmpty()) {
      throw new Rejected(
          "missing required headers (webhook-id, webhook-timestamp, webhook-signature)");
    }
    if (!timestampText.matches("[0-9]+")) throw new Rejected("invalid webhook-timestamp");
    long timestamp;
    try {
      timestamp = Long.parseLong(timestampText);
    } catch (NumberFormatException tooLong) {
      // Only digits, and more than a long holds: far in the future.
      throw new Rejected("timestamp too new");
    }
    if (now - timestamp > TOLERANCE_SECONDS) throw new Rejected("timestamp too old");
    if (timestamp > now + TOLERANCE_SECONDS) throw new Rejected("timestamp too new");

    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    mac.update((msgId + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
    byte[] expected =
        Base64.getEncoder().encodeToString(mac.doFinal(body)).getBytes(StandardCharsets.UTF_8);
    for (String entry : signatures.split(" ", -1)) {
      String[] parts = entry.split(",", -1);
      if (parts.length < 2 || !parts[0].equals("v1")) continue;
      // MessageDigest.isEqual takes the same time whatever bytes differ.
      if (MessageDigest.isEqual(parts[1].getBytes(StandardCharsets.UTF_8), expected)) {
        return msgId;
      }
    }
    throw new Rejected("no matching signature");
  }

  /** The headers of a {@code Name: value} file, by lower-case name (the first of a repeated one). */
  static Map<String, String> readHeaders(Path path) throws IOException {
    Map<String, String> headers = new HashMap<>();
    for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
      int colon = line.indexOf(':');
      if (colon < 0) continue;
      headers.putIfAbsent(
          line.substring(0, colon).strip().toLowerCase(Locale.ROOT),
          line.substring(colon + 1).strip());
    }
    return headers;
  }

  public static void main(String[] args) throws GeneralSecurityException {
    if (args.length != 2) {
      System.err.println(
          "usage: WEBHOOK_SECRET=whsec_... java -cp out VerifyWebhook HEADERS_FILE BODY_FILE");
      System.exit(2);
    }
    String secret = System.getenv().getOrDefault("WEBHOOK_SECRET", "");
    if (secret.isEmpty()) {
      System.err.println("WEBHOOK_SECRET is not set");
      System.exit(2);
    }
    byte[] key;
    Map<String, String> headers;
    byte[] body;
    try {
      key = secretKey(secret);
      headers = readHeaders(Path.of(args[0]));
      body = Files.readAllBytes(Path.of(args[1]));
    } catch (IOException | IllegalArgumentException err) {
      System.err.println(err.getMessage());
      System.exit(2);
      return;
    }
    try {
      String msgId = verify(key, headers, body, Instant.now().getEpochSecond());
      System.out.println("OK " + msgId);
    } catch (Rejected reason) {
      System.err.println("REJECTED: " + reason.getMessage());
      System.exit(1);
    }
  }
}
