"""The safetensors file format, written and read here (no external package).

Layout: an 8-byte little-endian header length N, N bytes of JSON
  {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
   "__metadata__": {"format": "pt"}}
(padded with spaces so the data starts 8-byte aligned), then the raw little-endian data; the
offsets are relative to the start of the data. Tensors are written through callbacks so that
strata.torch can write straight from Strata's pages and read straight into them.
"""
import json
import os
import struct

import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
          torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
TORCH_DTYPES = {code: dtype for dtype, code in DTYPES.items()}


def _itemsize(dtype):
    return torch.tensor([], dtype=dtype).element_size()


def write(path, tensors):
    """tensors: [(name, torch dtype, shape, write)] where write(f) writes the tensor's bytes.

    The file appears under `path` only once complete (written to path + ".tmp", renamed)."""
    header, offset = {}, 0
    for name, dtype, shape, _ in tensors:
        n = _itemsize(dtype)
        for d in shape:
            n *= d
        header[name] = {"dtype": DTYPES[dtype], "shape": list(shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    tmp = str(path) + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        start = f.tell()
        for name, _, _, write_data in tensors:
            write_data(f)
            begin, end = header[name]["data_offsets"]
            if f.tell() - start != end:
                raise RuntimeError(f"safetensors: '{name}' wrote {f.tell() - start - begin} "
                                   f"bytes, expected {end - begin}")
    os.replace(tmp, path)


def read_header(f):
    """{name: (torch dtype, shape, absolute begin, nbytes)} of an open file, checked."""
    size = os.fstat(f.fileno()).st_size
    prefix = f.read(8)
    if len(prefix) != 8:
        raise ValueError(f"safetensors: {f.name} is too short ({size} bytes)")
    (n,) = struct.unpack("<Q", prefix)
    if 8 + n > size:
        raise ValueError(f"safetensors: {f.name}'s header length {n} exceeds the file")
    header = json.loads(f.read(n))
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = TORCH_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"safetensors: '{name}' has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        expect = _itemsize(dtype)
        for d in info["shape"]:
            expect *= d
        if end - begin != expect or begin < 0 or 8 + n + end > size:
            raise ValueError(f"safetensors: '{name}' has bad data_offsets {[begin, end]} for "
                             f"shape {info['shape']} in a {size}-byte file")
        out[name] = (dtype, tuple(info["shape"]), 8 + n + begin, end - begin)
    return out


def read_into(f, begin, memory):
    """Reads len(memory) bytes at `begin` into a writable buffer (a Strata page)."""
    f.seek(begin)
    view = memoryview(memory).cast("B")
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise ValueError(f"safetensors: {f.name} ends early")
        done += got
