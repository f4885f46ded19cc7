"""The learned code encoder (issue 13, model 2): a small transformer over an implementation's source.

Where the shipped pairwise model (:mod:`~cudaperf_env.ranker.model`) compares hand-made
features, this one reads the code. A submission's source becomes a token sequence
(:func:`code_words`: comments and directives dropped, one-token macros expanded, names
kept only where they mean the same in every family, such as ``threadIdx`` or
``__syncthreads``, and others renamed by first use, numbers bucketed by magnitude); a
transformer encodes it to one vector; a small head reads that vector beside the
configuration's parallelism features and context (the problem size: the source alone
cannot say how many threads a launch makes of it) and, with ``compiler=True``, the
compiler's features (ptxas resources, occupancy and the SASS histogram, from records made
with ``--compiler``) and gives a speed score. The
probability that ``a`` is faster than ``b`` at a configuration is
``sigmoid(score(a) - score(b))`` (Bradley-Terry), trained on the same pairs as the
trees, each task's pairs weighing 1 in all.

Needs torch (``pip install 'cudaperf-env[agent]'`` or any torch). It ships only if it
beats the trees on held-out families: ``python benchmarks/ranker_encoder.py`` trains it
and measures both on the same pairs (docs/structural-analysis.md, "Code encoder").
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.ranker.features import COMPILER, CONTEXT, PARALLELISM, context, vector
from cudaperf_env.ranker.pairs import Pair
from cudaperf_env.source.tokens import code_tokens, tokenize
from cudaperf_env.source.unit import parse

Records = Mapping[tuple[str, str], Mapping[str, Any]]
Sources = Mapping[tuple[str, str], str]
"""``{(task id, implementation name): CUDA source}``."""
PAD, UNKNOWN = "<pad>", "<unk>"
CONFIG_FEATURES = tuple(f"parallelism/{n}" for n in PARALLELISM)
COMPILER_FEATURES = tuple(f"compiler/{n}" for n in COMPILER)
_NAMES = 48  # renamed identifiers v0 .. v47; later ones share v48


@dataclass(frozen=True)
class EncoderConfig:
    """The encoder's size and training.

    Attributes:
        width: Model width (embedding and attention).
        layers: Transformer layers.
        heads: Attention heads.
        max_tokens: Longest sequence read; longer sources keep their first and last halves
            (the host function with the launches comes last).
        steps: Optimizer steps.
        batch_pairs: Pairs per step.
        lr: Peak learning rate (AdamW, linear warm-up over 5% of the steps, cosine decay).
        weight_decay: AdamW weight decay.
        dropout: Dropout in the transformer and the head.
        min_families: A name is kept as itself when it occurs in this many training families.
        seed: Seed of initialization and pair sampling.
        device: ``cpu``, ``cuda`` or ``auto``.
        max_minutes: Stop training after this long (0: no limit).
        compiler: The head also reads the compiler's features (a record without them reads
            as the training mean).
    """

    width: int = 128
    layers: int = 2
    heads: int = 4
    max_tokens: int = 768
    steps: int = 2000
    batch_pairs: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    dropout: float = 0.1
    min_families: int = 5
    seed: int = 0
    device: str = "auto"
    max_minutes: float = 0.0
    compiler: bool = False

    @property
    def head_features(self) -> tuple[str, ...]:
        """The record's features the head reads beside the code vector (then :data:`CONTEXT`)."""
        return CONFIG_FEATURES + (COMPILER_FEATURES if self.compiler else ())


def code_words(source: str, keep: frozenset[str] | None = None) -> list[str]:
    """The source as the encoder's words (see the module doc); ``keep``: names kept as themselves."""
    unit = parse(source)
    macros = {m.name: m.body[0].text for m in unit.defines if m.params is None and len(m.body) == 1}
    renamed: dict[str, str] = {}
    words = []
    pragmas = [d for d in unit.directives if _PRAGMA.match(d.text)]  # unrolling is structure; other directives not
    for token in sorted((*unit.code, *pragmas), key=lambda t: t.start):
        if token.kind == "directive":
            words.append("#pragma_" + _PRAGMA.match(token.text).group(1))  # type: ignore[union-attr]
            continue
        text = macros.get(token.text, token.text) if token.kind == "ident" else token.text
        kind = "number" if token.kind == "ident" and _NUMBER.fullmatch(text) else token.kind
        if kind == "number":
            words.append(_number_word(text))
        elif kind == "ident" and (keep is None or text not in keep) and text not in _KEYWORDS:
            renamed.setdefault(text, f"v{min(len(renamed), _NAMES)}")
            words.append(renamed[text])
        elif kind in ("string", "char"):
            words.append(f"<{kind}>")
        else:
            words.append(text)
    return words


def shared_names(sources: Sources, families: Mapping[str, str], min_families: int) -> frozenset[str]:
    """Identifiers that occur in at least ``min_families`` families: the generic vocabulary of CUDA code."""
    seen: dict[str, set[str]] = {}
    for (task_id, _), source in sources.items():
        for token in code_tokens(source, tokenize(source))[0]:
            if token.kind == "ident":
                seen.setdefault(token.text, set()).add(families[task_id])
    return frozenset(name for name, fams in seen.items() if len(fams) >= min_families)


def fit_encoder(config: EncoderConfig, pairs: Sequence[Pair], sources: Sources, records: Records,
                families: Mapping[str, str], progress: Callable[[int, int, float], None] | None = None
                ) -> EncoderModel:  # fmt: skip
    """Trains the encoder on ``pairs`` (each task's pairs sampled as one task: tasks uniformly, then a pair).

    Args:
        config: Size and training.
        pairs: Training pairs; both implementations' sources and records must exist.
        sources: Source of every implementation.
        records: Feature records (for the configuration features).
        families: Family of every task id (decides which names are generic).
        progress: Called with ``(step, steps, loss)``.
    """
    torch = _torch()
    pairs = [p for p in pairs if _usable(p, sources, records)]
    if not pairs:
        raise ValueError("no training pairs with sources and feature records")
    torch.manual_seed(config.seed)
    seen = {(p.task, s) for p in pairs for s in (p.faster, p.slower)}
    keep = shared_names({k: sources[k] for k in seen}, families, config.min_families)
    words = {key: code_words(sources[key], keep) for key in seen}
    counts = Counter(w for ws in words.values() for w in ws)
    vocab = (PAD, UNKNOWN, *sorted(w for w, c in counts.items() if c >= 2))
    columns = _config_columns(pairs, records, config.head_features)
    with warnings.catch_warnings():  # a feature no training record has: an all-NaN column, scaled as 0 +- 1
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, scale = np.nanmean(columns, axis=0), np.nanstd(columns, axis=0)
    mean, scale = np.nan_to_num(mean), np.nan_to_num(scale)
    model = EncoderModel(config, vocab, keep, mean, np.where(scale > 0, scale, 1.0))
    net = model.network(torch)
    device = _device(torch, config.device)
    net.to(device).train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    by_task: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_task.setdefault(pair.task, []).append(pair)
    task_ids = sorted(by_task)
    rng = np.random.default_rng(config.seed)
    start, warmup = time.monotonic(), max(1, config.steps // 20)
    for step in range(config.steps):
        lr = config.lr * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / config.steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = [by_task[t][rng.integers(len(by_task[t]))] for t in rng.choice(task_ids, config.batch_pairs)]
        fast, slow = model.scores(net, torch, device, batch, sources, records, words)
        loss = torch.nn.functional.softplus(slow - fast).mean()  # -log sigmoid(fast - slow)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        if progress is not None:
            progress(step + 1, config.steps, loss.item())
        if config.max_minutes and time.monotonic() - start > 60 * config.max_minutes:
            break
    model.state = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    return model


class EncoderModel:
    """A trained encoder: its vocabulary, kept names, feature scaling and weights."""

    def __init__(self, config: EncoderConfig, vocab: Sequence[str], keep: frozenset[str], mean: np.ndarray,
                 scale: np.ndarray, state: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        self.config, self.vocab, self.keep = config, tuple(vocab), frozenset(keep)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.mean, self.scale, self.state = np.asarray(mean, float), np.asarray(scale, float), state

    def network(self, torch: Any) -> Any:
        """A fresh network of this model's shape (with its weights, once trained)."""
        net = _network(torch, self.config, len(self.vocab), len(self.config.head_features) + len(CONTEXT))
        if self.state is not None:
            net.load_state_dict(self.state)
        return net

    def scores(self, net: Any, torch: Any, device: Any, pairs: Sequence[Pair], sources: Sources, records: Records,
               words: Mapping[tuple[str, str], list[str]] | None = None) -> tuple[Any, Any]:  # fmt: skip
        """Scores of each pair's faster and slower side (tensors of ``len(pairs)``); each source encoded once."""
        keys = sorted({(p.task, s) for p in pairs for s in (p.faster, p.slower)})
        row = {k: i for i, k in enumerate(keys)}
        ids = [self._ids(words[k] if words and k in words else code_words(sources[k], self.keep)) for k in keys]
        width = max(len(x) for x in ids)
        tokens = torch.tensor([x + [0] * (width - len(x)) for x in ids], device=device)
        encoded = net.encode(tokens)  # (implementations, width)
        sides = []
        for side in ("faster", "slower"):
            owners = [row[(p.task, getattr(p, side))] for p in pairs]
            feats = np.stack([self._config_row(records[(p.task, getattr(p, side))], p) for p in pairs])
            sides.append(net.head(encoded[owners], torch.tensor(feats, dtype=torch.float32, device=device)))
        return sides[0], sides[1]

    def probabilities(self, pairs: Sequence[Pair], sources: Sources, records: Records,
                      batch: int = 256) -> np.ndarray:  # fmt: skip
        """P(the faster side is faster) per pair (NaN where a source or record is missing)."""
        torch = _torch()
        net, device = self.network(torch), _device(torch, self.config.device)
        net.to(device).eval()
        out = np.full(len(pairs), math.nan)
        usable = [i for i, p in enumerate(pairs) if _usable(p, sources, records)]
        keys = {(pairs[i].task, s) for i in usable for s in (pairs[i].faster, pairs[i].slower)}
        words = {key: code_words(sources[key], self.keep) for key in keys}  # once, though in many pairs
        with torch.no_grad():
            for lo in range(0, len(usable), batch):
                chunk = usable[lo : lo + batch]
                fast, slow = self.scores(net, torch, device, [pairs[i] for i in chunk], sources, records, words)
                out[chunk] = torch.sigmoid(fast - slow).cpu().numpy()
        return out

    def save(self, path: str | Path) -> None:
        """Weights, vocabulary and settings in one torch file."""
        torch = _torch()
        torch.save({"config": asdict(self.config), "vocab": list(self.vocab), "keep": sorted(self.keep),
                    "mean": self.mean.tolist(), "scale": self.scale.tolist(), "state": self.state}, path)  # fmt: skip

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> EncoderModel:
        """A saved encoder, to run on ``device`` (default: the one it trained on); weights load on the CPU first."""
        data = _torch().load(path, weights_only=True, map_location="cpu")
        config = EncoderConfig(**data["config"])
        if device is not None:
            config = replace(config, device=device)
        return cls(config, data["vocab"], frozenset(data["keep"]), np.array(data["mean"]), np.array(data["scale"]),
                   data["state"])  # fmt: skip

    def _ids(self, words: Sequence[str]) -> list[int]:
        limit = self.config.max_tokens
        if len(words) > limit:
            words = [*words[: limit // 2], *words[len(words) - (limit - limit // 2) :]]
        return [self.index.get(w, 1) for w in words] or [1]  # a source without code reads as one unknown word

    def _config_row(self, record: Mapping[str, Any], pair: Pair) -> np.ndarray:
        raw = np.concatenate([vector(record, pair.config, self.config.head_features),
                              context(record, pair.config, pair.kind)])  # fmt: skip
        return np.nan_to_num((raw - self.mean) / self.scale)


def _network(torch: Any, config: EncoderConfig, vocab: int, config_width: int) -> Any:
    nn = torch.nn

    class Net(nn.Module):  # type: ignore[name-defined]  # torch is imported at run time
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, config.width, padding_idx=0)
            self.position = nn.Embedding(config.max_tokens, config.width)
            layer = nn.TransformerEncoderLayer(config.width, config.heads, 4 * config.width, config.dropout,
                                               batch_first=True, norm_first=True)  # fmt: skip
            self.body = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(config.width)
            self.score = nn.Sequential(nn.Linear(config.width + config_width, 2 * config.width), nn.GELU(),
                                       nn.Dropout(config.dropout), nn.Linear(2 * config.width, 1))  # fmt: skip

        def encode(self, tokens: Any) -> Any:
            pad = tokens == 0
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            h = self.body(self.embed(tokens) + self.position(positions), src_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).float()
            return self.norm((h * keep).sum(1) / keep.sum(1).clamp(min=1.0))

        def head(self, encoded: Any, features: Any) -> Any:
            return self.score(torch.cat([encoded, features], dim=1)).squeeze(1)

    return Net()


def _config_columns(pairs: Sequence[Pair], records: Records, names: Sequence[str]) -> np.ndarray:
    rows = [np.concatenate([vector(records[(p.task, s)], p.config, names),
                            context(records[(p.task, s)], p.config, p.kind)])
            for p in pairs[:20000] for s in (p.faster, p.slower)]  # fmt: skip
    return np.array(rows)


def _usable(pair: Pair, sources: Sources, records: Records) -> bool:
    return all((pair.task, s) in sources and (pair.task, s) in records for s in (pair.faster, pair.slower))


def _number_word(text: str) -> str:
    """Small integers as themselves, larger ones as their power of two, floats as one word."""
    digits = text.rstrip("uUlL")
    try:
        value = int(digits, 0)
    except ValueError:
        return "<float>"
    return digits if value <= 64 else f"<2^{value.bit_length() - 1}>"


def _device(torch: Any, name: str) -> Any:
    return torch.device("cuda" if name == "auto" and torch.cuda.is_available() else "cpu" if name == "auto" else name)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ImportError("the code encoder needs torch: pip install 'cudaperf-env[agent]' (or any torch)") from exc
    return torch


_NUMBER = re.compile(r"\d[\w.']*")
_PRAGMA = re.compile(r"\s*#\s*pragma\s+(unroll|nounroll)\b")
_KEYWORDS = frozenset({
    "if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default", "goto",
    "int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "void", "auto", "const",
    "constexpr", "static", "inline", "struct", "class", "template", "typename", "sizeof", "true", "false",
    "extern", "volatile", "__restrict__", "__global__", "__device__", "__host__", "__shared__", "__constant__",
    "__forceinline__", "__launch_bounds__", "size_t", "nullptr",
})  # fmt: skip
