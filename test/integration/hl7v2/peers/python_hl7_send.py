"""Sends a file of MLLP-framed messages to an MLLP server as python-hl7's `mllp_send -f` does.

Usage: /usr/bin/python3 python_hl7_send.py <host> <port> <file>

The file is read and split by `hl7.client.read_stream` and each message sent with
`hl7.client.MLLPClient.send_message`, the calls `mllp_send` makes. Each ACK is then decoded with
the character set its own MSH-18 names (HL7 table 0211) and parsed with `hl7.parse`; one JSON line
per ACK goes to stdout: MSH-18, the codec used, MSH-6, MSA-1 and MSA-2.
Exit codes: 0 done, 2 an ACK that is not one whole frame or names an unknown character set,
3 python-hl7 missing.
"""

import io
import json
import sys

try:
    import hl7
    from hl7.client import CR, EB, SB, MLLPClient, read_stream
except ImportError:
    sys.stderr.write(
        "python-hl7 is missing for %s: install Debian's python3-hl7 "
        "(apt-get install python3-hl7)\n" % sys.executable
    )
    sys.exit(3)

# HL7 table 0211 names of the ACK's MSH-18 and their Python codecs.
CODECS = {"": "ascii", "ASCII": "ascii", "UNICODE UTF-8": "utf-8"}
CODECS.update({"8859/%d" % n: "iso8859-%d" % n for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 15)})


def fail(reason):
    sys.stderr.write(reason + "\n")
    sys.exit(2)


def whole_frame(client, received):
    """`MLLPClient.send` returns one `recv`: read on until the frame's FS CR is there."""
    while not received.endswith(EB + CR):
        more = client.socket.recv(4096)
        if not more:
            fail("the connection closed inside an ACK frame")
        received += more
    if not received.startswith(SB):
        fail("an ACK frame does not start with VT")
    return received[1:-2]


def decode(body):
    """The ACK read in the character set its MSH-18 names (MSH-18 itself is ASCII)."""
    msh = body.split(CR, 1)[0]
    fields = msh.split(msh[3:4])
    charset = fields[17].decode("ascii") if len(fields) > 17 else ""
    codec = CODECS.get(charset)
    if codec is None:
        fail("an ACK names a character set this script does not know: %r" % charset)
    return charset, codec, body.decode(codec)


def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, "rb") as f:
        stream = io.BytesIO(f.read())
    with MLLPClient(host, port) as client:
        for message in read_stream(stream):
            body = whole_frame(client, client.send_message(message))
            charset, codec, text = decode(body)
            ack = hl7.parse(text)
            line = {
                "charset": charset,
                "codec": codec,
                "msh6": str(ack.segment("MSH")[6]),
                "msa1": str(ack.segment("MSA")[1]),
                "msa2": str(ack.segment("MSA")[2]),
            }
            sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
