"""Cryptocurrency wallet addresses, accepted only when their checksum holds.

Address-shaped strings are everywhere in code (base58 ids, hex constants), so the shape alone is
never enough: Bitcoin-family legacy addresses must pass base58check with a known version byte,
segwit addresses the bech32/bech32m checksum, and Ethereum addresses the EIP-55 mixed-case
checksum. An all-lowercase (or all-uppercase) Ethereum address carries no checksum; it counts
only with a wallet word earlier on its line.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterator

from .detectors import Candidate
from .patterns import IDS
from .validators import has_b64_run

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58)}
# version byte -> coin: BTC P2PKH/P2SH, LTC P2PKH/P2SH, DOGE P2PKH/P2SH
_B58_VERSIONS = frozenset({0x00, 0x05, 0x30, 0x32, 0x1E, 0x16})
_B58_ADDR = re.compile(r"[13LMD9A](?<![A-Za-z0-9_/+.=-][13LMD9A])[1-9A-HJ-NP-Za-km-z]{25,34}(?![A-Za-z0-9_/+=])")

_BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BECH32_INDEX = {c: i for i, c in enumerate(_BECH32_CHARSET)}
_BECH32_ADDR = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:bc|tb|ltc)1[ac-hj-np-z02-9]{11,71}(?![A-Za-z0-9_])")

_ETH_ADDR = re.compile(r"0(?<![A-Za-z0-9_]0)x[0-9a-fA-F]{40}(?![A-Za-z0-9_])")
_WALLET_WORDS = re.compile(r"(?i)wallet|\beth(?:ereum)?\b|\beth_|recipient|beneficiary|payout|deposit|"
                           r"withdraw|metamask|\bsend\b|\bto_?addr|\bfrom_?addr|address")


def base58check_ok(s: str) -> bool:
    """25-byte payload with a known version byte and a valid double-SHA-256 checksum."""
    n = 0
    for c in s:
        n = n * 58 + _B58_INDEX[c]
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\x00" * (len(s) - len(s.lstrip("1"))) + raw
    if len(raw) != 25 or raw[0] not in _B58_VERSIONS:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:21]).digest()).digest()[:4] == raw[21:]


def _bech32_polymod(values: list[int]) -> int:
    gen = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def bech32_ok(s: str) -> bool:
    """BIP-173 (bech32) or BIP-350 (bech32m) checksum over a single-case address."""
    if s != s.lower() and s != s.upper():
        return False
    s = s.lower()
    hrp, _, data = s.rpartition("1")
    if not hrp or len(data) < 6:
        return False
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + [_BECH32_INDEX[c] for c in data]
    return _bech32_polymod(values) in (1, 0x2BC830A3)


# ---- Keccak-256 (the pre-standard padding Ethereum uses; hashlib's sha3_256 differs)
_RC = (0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000, 0x000000000000808B,
       0x0000000080000001, 0x8000000080008081, 0x8000000000008009, 0x000000000000008A, 0x0000000000000088,
       0x0000000080008009, 0x000000008000000A, 0x000000008000808B, 0x800000000000008B, 0x8000000000008089,
       0x8000000000008003, 0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
       0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008)
_ROT = ((0, 36, 3, 41, 18), (1, 44, 10, 45, 2), (62, 6, 43, 15, 61), (28, 55, 25, 21, 56), (27, 20, 39, 8, 14))
_M64 = (1 << 64) - 1


def _keccak_f(a: list[list[int]]) -> None:
    for rc in _RC:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ ((c[(x + 1) % 5] << 1 | c[(x + 1) % 5] >> 63) & _M64) for x in range(5)]
        for x in range(5):
            for y in range(5):
                a[x][y] ^= d[x]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                r = _ROT[x][y]
                b[y][(2 * x + 3 * y) % 5] = (a[x][y] << r | a[x][y] >> (64 - r)) & _M64 if r else a[x][y]
        for x in range(5):
            for y in range(5):
                a[x][y] = b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y])
        a[0][0] ^= rc


def keccak256(data: bytes) -> bytes:
    """Keccak-256 digest (rate 136 bytes, pad 0x01..0x80)."""
    rate = 136
    msg = bytearray(data) + b"\x01" + b"\x00" * ((-len(data) - 1) % rate)
    msg[-1] |= 0x80
    a = [[0] * 5 for _ in range(5)]
    for off in range(0, len(msg), rate):
        block = msg[off:off + rate]
        for i in range(rate // 8):
            a[i % 5][i // 5] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        _keccak_f(a)
    return b"".join(a[i % 5][i // 5].to_bytes(8, "little") for i in range(4))


def eip55_ok(addr: str) -> bool:
    """True when the mixed-case hex of `0x...` matches its EIP-55 checksum."""
    hexpart = addr[2:]
    h = keccak256(hexpart.lower().encode()).hex()
    return all((c.upper() if int(h[i], 16) >= 8 else c.lower()) == c for i, c in enumerate(hexpart))


def detect_wallets(text: str, lower: str) -> Iterator[Candidate]:
    """Checksummed BTC/LTC/DOGE base58 and segwit addresses; EIP-55 ETH addresses (unchecksummed
    ones after a wallet word on the same line)."""
    if "0x" in lower:
        for m in _ETH_ADDR.finditer(text):
            hexpart = m.group(0)[2:]
            if hexpart.isupper() and eip55_ok(m.group(0)):
                pass  # all letters upper-case by the checksum: as good as a mixed-case match
            elif hexpart.islower() or hexpart.isupper() or hexpart.isdigit():
                if len(set(hexpart)) < 8:
                    continue  # 0x000...0, 0xdead...: constants, burn addresses
                line_start = text.rfind("\n", 0, m.start()) + 1
                if not _WALLET_WORDS.search(text, max(line_start, m.start() - 80), m.start()):
                    continue
            elif not eip55_ok(m.group(0)):
                continue
            yield Candidate(m.start(), m.end(), IDS, "CRYPTO_WALLET", "eth_address", 3)
    if not has_b64_run(text, 26):
        return  # every base58/bech32 address is a run of >= 26 alphanumerics
    if "bc1" in lower or "tb1" in lower or "ltc1" in lower:
        for m in _BECH32_ADDR.finditer(text):
            if bech32_ok(m.group(0)):
                yield Candidate(m.start(), m.end(), IDS, "CRYPTO_WALLET", "bech32_address", 3)
    for m in _B58_ADDR.finditer(text):
        if base58check_ok(m.group(0)):
            yield Candidate(m.start(), m.end(), IDS, "CRYPTO_WALLET", "base58_address", 3)
