#!/usr/bin/env python3
"""Readiness probe for scripts/kafka: is the broker answering the group APIs?

Usage: kafka_probe.py HOST:PORT [--timeout SECS] [--group G] [--ca CA.pem] [--sasl-plain USER:PASSWORD]

Succeeds (exit 0) once the broker answers ApiVersions (v0) with error 0 AND FindCoordinator (v1)
for a group with error 0. Retriable answers (connection refused, COORDINATOR_NOT_AVAILABLE 15,
COORDINATOR_LOAD_IN_PROGRESS 14) are retried until the timeout; then it exits 1 with the last
reason. With --ca it speaks TLS (trusting that CA, checking the host name); with --sasl-plain it
authenticates first (SaslHandshake v1 + SaslAuthenticate v0, mechanism PLAIN). Kept to the Python
standard library so scripts/kafka needs nothing but Java and Maven.
"""
import argparse
import socket
import ssl
import struct
import sys
import time


def request(sock, api_key, version, correlation_id, body):
    client_id = b"kroupier-probe"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    if size < 4 or size > 16 * 1024 * 1024:
        raise IOError(f"bad response frame length {size}")
    payload = recv_exact(sock, size)
    got = struct.unpack(">i", payload[:4])[0]
    if got != correlation_id:
        raise IOError(f"correlation id {got} != {correlation_id}")
    return payload[4:]


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise IOError("connection closed by broker")
        buf += chunk
    return buf


def authenticate_plain(sock, credentials):
    user, _, password = credentials.partition(":")
    mechanism = b"PLAIN"
    # SaslHandshake v1: mechanism (string); response error_code int16, mechanisms.
    body = request(sock, 17, 1, 100, struct.pack(">h", len(mechanism)) + mechanism)
    error = struct.unpack(">h", body[:2])[0]
    if error != 0:
        return f"SaslHandshake error {error}"
    token = b"\0" + user.encode() + b"\0" + password.encode()
    # SaslAuthenticate v0: auth_bytes (bytes); response error_code int16, ...
    body = request(sock, 36, 0, 101, struct.pack(">i", len(token)) + token)
    error = struct.unpack(">h", body[:2])[0]
    if error != 0:
        return f"SaslAuthenticate error {error}"
    return None


def probe_once(host, port, group, tls, sasl_plain):
    with socket.create_connection((host, port), timeout=5) as raw:
        sock = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        sock.settimeout(10)
        if sasl_plain:
            reason = authenticate_plain(sock, sasl_plain)
            if reason:
                return reason
        # ApiVersions v0: empty body; response starts with error_code int16.
        body = request(sock, 18, 0, 1, b"")
        error = struct.unpack(">h", body[:2])[0]
        if error != 0:
            return f"ApiVersions error {error}"
        # FindCoordinator v1: key (string), key_type (int8, 0 = group).
        key = group.encode()
        body = request(sock, 10, 1, 2, struct.pack(">h", len(key)) + key + b"\x00")
        # throttle_time_ms int32, error_code int16, ...
        error = struct.unpack(">h", body[4:6])[0]
        if error != 0:
            return f"FindCoordinator error {error}"
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--group", default="kroupier-readiness")
    parser.add_argument("--ca", help="speak TLS, trusting this PEM CA certificate")
    parser.add_argument("--sasl-plain", help="authenticate with SASL PLAIN as USER:PASSWORD")
    args = parser.parse_args()
    tls = ssl.create_default_context(cafile=args.ca) if args.ca else None
    host, _, port = args.address.rpartition(":")
    deadline = time.monotonic() + args.timeout
    reason = "not tried"
    while True:
        try:
            reason = probe_once(host, int(port), args.group, tls, args.sasl_plain)
            if reason is None:
                return 0
        except (OSError, IOError, struct.error, ssl.SSLError) as e:
            reason = str(e) or type(e).__name__
        if time.monotonic() >= deadline:
            print(f"broker at {args.address} not ready after {args.timeout:.0f}s: {reason}", file=sys.stderr)
            return 1
        time.sleep(0.25)


if __name__ == "__main__":
    sys.exit(main())
