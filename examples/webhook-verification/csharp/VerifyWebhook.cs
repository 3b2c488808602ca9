// Verifies one concordance-worker webhook request: its signature and its timestamp.
//
// The scheme is Standard Webhooks' (see docs/webhook-verification.md):
//
//   signed content = "{webhook-id}.{webhook-timestamp}." + raw body bytes
//   key            = base64-decode(secret without its "whsec_" prefix)
//   signature      = "v1," + base64(HMAC-SHA256(key, signed content))
//
// A request is accepted when its timestamp is at most 5 minutes away from now (either way) and
// one of the space-separated entries of `webhook-signature` is that v1 signature.
//
// Usage (base class library only; .NET, or Mono's `mcs` and `mono`):
//
//   mcs -out:VerifyWebhook.exe VerifyWebhook.cs
//   WEBHOOK_SECRET=whsec_... mono VerifyWebhook.exe HEADERS_FILE BODY_FILE
//
// HEADERS_FILE holds the request's headers, one `Name: value` a line (names in any case; lines
// without a colon, such as a status line, are skipped). BODY_FILE holds the body exactly as
// received: verify the raw bytes, never a re-serialised JSON object.
//
// Exit status: 0 and `OK <webhook-id>` on standard output when the request is genuine; 1 and
// `REJECTED: <reason>` on standard error when it is not; 2 for a usage or configuration error.
// In a web handler, call Verify with the request's headers and raw body, answer 401 when it
// throws RejectedException, and deduplicate on the returned webhook-id (a retry has the same id
// and a fresh timestamp and signature).

using System;
using System.Collections.Generic;
using System.IO;
using System.Security.Cryptography;
using System.Text;
using System.Text.RegularExpressions;

public sealed class RejectedException : Exception
{
    public RejectedException(string reason) : base(reason) { }
}

public static class VerifyWebhook
{
    const long ToleranceSeconds = 5 * 60;
    const string SecretPrefix = "whsec_";

    /// <summary>The HMAC key of a whsec_ secret: the bytes its base64 text stands for.</summary>
    public static byte[] SecretKey(string secret)
    {
        string text = secret.Trim();
        if (text.StartsWith(SecretPrefix, StringComparison.Ordinal))
            text = text.Substring(SecretPrefix.Length);
        // Convert.FromBase64String would skip white space inside: only base64 gets through.
        if (!Regex.IsMatch(text, "^[A-Za-z0-9+/]*={0,2}$"))
            throw new ArgumentException("WEBHOOK_SECRET is not base64 after its whsec_ prefix");
        // With its padding or without.
        string digits = text.TrimEnd('=');
        byte[] key;
        try
        {
            key = Convert.FromBase64String(digits + new string('=', (4 - digits.Length % 4) % 4));
        }
        catch (FormatException)
        {
            throw new ArgumentException("WEBHOOK_SECRET is not base64 after its whsec_ prefix");
        }
        if (key.Length == 0) throw new ArgumentException("WEBHOOK_SECRET is empty");
        return key;
    }

    /// <summary>
    /// Returns the webhook-id of a genuine request; throws RejectedException otherwise.
    /// `headers` are by lower-case name, `body` is the raw body, `now` the Unix time in seconds.
    /// </summary>
    public static string Verify(byte[] key, IDictionary<string, string> headers, byte[] body, long now)
    {
        string msgId = Header(headers, "webhook-id");
        string timestampText = Header(headers, "webhook-timestamp");
        string signatures = Header(headers, "webhook-signature");
        if (msgId.Length == 0 || timestampText.Length == 0 || signatures.Length == 0)
            throw new RejectedException(
                "missing required headers (webhook-id, webhook-timestamp, webhook-signature)");
        if (!Regex.IsMatch(timestampText, "^[0-9]+$"))
            throw new RejectedException("invalid webhook-timestamp");
        long timestamp;
        // Only digits, and more than a long holds: far in the future.
        if (!long.TryParse(timestampText, out timestamp))
            throw new RejectedException("timestamp too new");
        if (now - timestamp > ToleranceSeconds) throw new RejectedException("timestamp too old");
        if (timestamp > now + ToleranceSeconds) throw new RejectedException("timestamp too new");

        byte[] prefix = Encoding.UTF8.GetBytes(msgId + "." + timestamp + ".");
        byte[] signed = new byte[prefix.Length + body.Length];
        Buffer.BlockCopy(prefix, 0, signed, 0, prefix.Length);
        Buffer.BlockCopy(body, 0, signed, prefix.Length, body.Length);
        byte[] expected;
        using (var hmac = new HMACSHA256(key))
            expected = Encoding.UTF8.GetBytes(Convert.ToBase64String(hmac.ComputeHash(signed)));
        foreach (string entry in signatures.Split(' '))
        {
            string[] parts = entry.Split(',');
            if (parts.Length < 2 || parts[0] != "v1") continue;
            // Takes the same time whatever bytes differ (.NET Core 2.1+, Mono 6).
            if (CryptographicOperations.FixedTimeEquals(Encoding.UTF8.GetBytes(parts[1]), expected))
                return msgId;
        }
        throw new RejectedException("no matching signature");
    }

    static string Header(IDictionary<string, string> headers, string name)
    {
        string value;
        return headers.TryGetValue(name, out value) ? value : "";
    }

    /// <summary>The headers of a `Name: value` file, by lower-case name (the first of a repeated one).</summary>
    public static Dictionary<string, string> ReadHeaders(string path)
    {
        var headers = new Dictionary<string, string>();
        foreach (string line in File.ReadAllLines(path, new UTF8Encoding(false, true)))
        {
            int colon = line.IndexOf(':');
            if (colon < 0) continue;
            string name = line.Substring(0, colon).Trim().ToLowerInvariant();
            if (!headers.ContainsKey(name)) headers[name] = line.Substring(colon + 1).Trim();
        }
        return headers;
    }

    public static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine(
                "usage: WEBHOOK_SECRET=whsec_... mono VerifyWebhook.exe HEADERS_FILE BODY_FILE");
            return 2;
        }
        string secret = Environment.GetEnvironmentVariable("WEBHOOK_SECRET") ?? "";
        if (secret.Length == 0)
        {
            Console.Error.WriteLine("WEBHOOK_SECRET is not set");
            return 2;
        }
        byte[] key;
        Dictionary<string, string> headers;
        byte[] body;
        try
        {
            key = SecretKey(secret);
            headers = ReadHeaders(args[0]);
            body = File.ReadAllBytes(args[1]);
        }
        catch (Exception err) when (err is IOException || err is ArgumentException
            || err is UnauthorizedAccessException || err is DecoderFallbackException)
        {
            Console.Error.WriteLine(err.Message);
            return 2;
        }
        try
        {
            string msgId = Verify(key, headers, body, DateTimeOffset.UtcNow.ToUnixTimeSeconds());
            Console.WriteLine("OK " + msgId);
            return 0;
        }
        catch (RejectedException reason)
        {
            Console.Error.WriteLine("REJECTED: " + reason.Message);
            return 1;
        }
    }
}
