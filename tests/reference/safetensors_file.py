"""Reads a .safetensors file into torch tensors without the safetensors package.

The format: an 8-byte little-endian header length n, n bytes of JSON
    {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
     "__metadata__": {...}}   (optional)
then the raw little-endian data; offsets count from the first byte after the header.
"""
import json
import struct
import sys

import torch

DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "U8": torch.uint8,
}


def load(path):
    """{name: tensor} for every tensor in the file (copies, in the stored dtype)."""
    if sys.byteorder != "little":
        raise RuntimeError("safetensors data is little-endian; this reader needs a little-endian host")
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    if len(blob) < 8:
        raise ValueError(f"{path}: too short to be a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    data_start = 8 + n
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {entry['dtype']}")
        begin, end = entry["data_offsets"]
        shape = entry["shape"]
        numel = 1
        for s in shape:
            numel *= s
        itemsize = torch.tensor([], dtype=dtype).element_size()
        if end - begin != numel * itemsize or data_start + end > len(blob):
            raise ValueError(f"{path}: tensor {name}: offsets {begin}..{end} do not fit shape {shape}")
        if numel == 0:
            tensors[name] = torch.zeros(shape, dtype=dtype)
            continue
        flat = torch.frombuffer(blob, dtype=dtype, count=numel, offset=data_start + begin)
        tensors[name] = flat.reshape(shape).clone()
    return tensors
