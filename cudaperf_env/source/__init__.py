"""Reading agent actions as C++/CUDA source: extraction, tokens, structure and the static screen."""

from cudaperf_env.source.extract import Extraction, extract_code, extract_python
from cudaperf_env.source.launches import Launch, LaunchError, find_launches
from cudaperf_env.source.screen import Finding, screen
from cudaperf_env.source.sync import reaching_sync
from cudaperf_env.source.tokens import Token, code_tokens, match_brackets, tokenize
from cudaperf_env.source.unit import Function, Macro, Unit, parse

__all__ = [
    "Extraction",
    "Finding",
    "Function",
    "Launch",
    "LaunchError",
    "Macro",
    "Token",
    "Unit",
    "code_tokens",
    "extract_code",
    "extract_python",
    "find_launches",
    "match_brackets",
    "parse",
    "reaching_sync",
    "screen",
    "tokenize",
]
