#!/usr/bin/env python3
"""Verifies one concordance-worker webhook request: its signature and its timestamp.

The scheme is Standard Webhooks' (see docs/webhook-verification.md):

    signed content = "{webhook-id}.{webhook-timestamp}." + raw body bytes
    key            = base64-decode(secret without its "whsec_" prefix)
    signature      = "v1," + base64(HMAC-SHA256(key, signed content))

A request is accepted when its timestamp is at most 5 minutes away from now (either way) and
one of the space-separated entries of `webhook-signature` is that v1 signature.

Usage:
    WEBHOOK_SECRET=whsec_... python3 verify_webhook.py HEADERS_FILE BODY_FILE

HEADERS_FILE holds the request's headers, one `Name: value` a line (names in any case; lines
without a colon, such as a status line, are skipped). BODY_FILE holds the body exactly as
received: verify the raw bytes, never a re-serialised JSON object.

Exit status: 0 and `OK <webhook-id>` on standard output when the request is genuine; 1 and
`REJECTED: <reason>` on standard error when it is not; 2 for a usage or configuration error.
Only the Python standard library is used. In a web handler, call `verify()` with the request's
headers and raw body, answer 401 when it raises `Rejected`, and deduplicate on the returned
webhook-id (a retry has the same id and a fresh timestamp and signature).
"""

import base64
import binascii
import hashlib
import hmac
import os
import re
import sys
import time

TOLERANCE_SECONDS = 5 * 60
SECRET_PREFIX = "whsec_"


class Rejected(Exception):
    """The request is not a genuine, current delivery."""


def secret_key(secret):
    """The HMAC key of a `whsec_` secret: the bytes its base64 text stands for."""
    text = secret.strip()
    if text.startswith(SECRET_PREFIX):
        text = text[len(SECRET_PREFIX):]
    if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", text):
        raise ValueError("WEBHOOK_SECRET is not base64 after its whsec_ prefix")
    digits = text.rstrip("=")
    try:
        # With its padding or without.
        key = base64.b64decode(digits + "=" * (-len(digits) % 4), validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError("WEBHOOK_SECRET is not base64 after its whsec_ prefix") from err
    if not key:
        raise ValueError("WEBHOOK_SECRET is empty")
    return key


def verify(key, headers, body, now=None):
    """Returns the webhook-id of a genuine request; raises Rejected otherwise.

    `headers` maps lower-case header names to values, `body` is the raw body (bytes).
    """
    msg_id = headers.get("webhook-id", "")
    timestamp_text = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not msg_id or not timestamp_text or not signatures:
        raise Rejected("missing required headers (webhook-id, webhook-timestamp, webhook-signature)")
    if not re.fullmatch(r"[0-9]+", timestamp_text):
        raise Rejected("invalid webhook-timestamp")
    timestamp = int(timestamp_text)
    now = int(time.time()) if now is None else now
    if now - timestamp > TOLERANCE_SECONDS:
        raise Rejected("timestamp too old")
    if timestamp > now + TOLERANCE_SECONDS:
        raise Rejected("timestamp too new")
    signed = f"{msg_id}.{timestamp}.".encode("utf-8") + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    for entry in signatures.split(" "):
        parts = entry.split(",")
        if len(parts) < 2 or parts[0] != "v1":
            continue
        if hmac.compare_digest(parts[1].encode("utf-8"), expected):
            return msg_id
    raise Rejected("no matching signature")


def read_headers(path):
    """The headers of a `Name: value` file, by lower-case name (the first of a repeated one)."""
    headers = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            name, colon, value = line.rstrip("\r\n").partition(":")
            if colon:
                headers.setdefault(name.strip().lower(), value.strip())
    return headers


def main(argv):
    if len(argv) != 3:
        print("usage: WEBHOOK_SECRET=whsec_... verify_webhook.py HEADERS_FILE BODY_FILE", file=sys.stderr)
        return 2
    secret = os.environ.get("WEBHOOK_SECRET", "")
    if not secret:
        print("WEBHOOK_SECRET is not set", file=sys.stderr)
        return 2
    try:
        key = secret_key(secret)
        headers = read_headers(argv[1])
        with open(argv[2], "rb") as body_file:
            body = body_file.read()
    except (OSError, ValueError) as err:
        print(err, file=sys.stderr)
        return 2
    try:
        msg_id = verify(key, headers, body)
    except Rejected as reason:
        print(f"REJECTED: {reason}", file=sys.stderr)
        return 1
    print(f"OK {msg_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
