"""Tests for the C/C++/CUDA tokenizer."""

from __future__ import annotations

import time

from cudaperf_env.source.tokens import (
    close_angle,
    code_tokens,
    directive_name,
    directive_tokens,
    join_tokens,
    match_brackets,
    open_angle,
    tokenize,
)


def kinds_and_texts(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source)]


def test_basic_tokens_with_offsets_and_lines() -> None:
    source = "int x = 42;\nfloat y=.5e-3f;"
    toks = tokenize(source)
    assert [(t.kind, t.text, t.line) for t in toks] == [
        ("ident", "int", 1), ("ident", "x", 1), ("punct", "=", 1), ("number", "42", 1),
        ("punct", ";", 1), ("ident", "float", 2), ("ident", "y", 2), ("punct", "=", 2),
        ("number", ".5e-3f", 2), ("punct", ";", 2),
    ]
    assert all(source[t.start : t.end] == t.text for t in toks)


def test_numbers_with_digit_separators_hex_and_suffixes() -> None:
    assert kinds_and_texts("1'000'000 0x1Fu 1.0e+10 0x1p-3 42ull") == [
        ("number", "1'000'000"), ("number", "0x1Fu"), ("number", "1.0e+10"),
        ("number", "0x1p-3"), ("number", "42ull"),
    ]


def test_string_and_char_literals_with_prefixes_and_escapes() -> None:
    source = r'''u8"a\"b" L"w" u'c' U'\'' '\\' "x<<<y>>>(z)"'''
    assert kinds_and_texts(source) == [
        ("string", r'u8"a\"b"'), ("string", 'L"w"'), ("char", "u'c'"),
        ("char", r"U'\''"), ("char", r"'\\'"), ("string", '"x<<<y>>>(z)"'),
    ]


def test_raw_strings_with_delimiters_span_lines() -> None:
    source = 'auto s = R"cu(a )" b\n<<<c>>>)cu"; int after;'
    toks = tokenize(source)
    assert toks[3].kind == "string"
    assert toks[3].text == 'R"cu(a )" b\n<<<c>>>)cu"'
    assert (toks[-2].text, toks[-2].line) == ("after", 2)
    assert kinds_and_texts('u8R"(x)" LR"(y)"') == [("string", 'u8R"(x)"'), ("string", 'LR"(y)"')]


def test_comments_line_and_block_with_line_counting() -> None:
    source = "a // one <<<\nb /* two\nthree */ c\n// spliced \\\nstill comment\nd"
    toks = tokenize(source)
    assert [(t.kind, t.line) for t in toks] == [
        ("ident", 1), ("comment", 1), ("ident", 2), ("comment", 2), ("ident", 3),
        ("comment", 4), ("ident", 6),
    ]


def test_unterminated_comment_and_raw_string_run_to_the_end() -> None:
    assert kinds_and_texts("a /* never closed\n b") == [
        ("ident", "a"), ("comment", "/* never closed\n b")
    ]
    assert kinds_and_texts('R"x(never') == [("string", 'R"x(never')]


def test_directives_with_continuations_and_leading_space() -> None:
    source = "  #define K(a) \\\n    a<<<1, 1>>>()\n#include <cstdio> // io\n"
    source += "int x;\n#if 0 /* c\n */\n"
    toks = tokenize(source)
    assert [(t.kind, t.line) for t in toks] == [
        ("directive", 1), ("directive", 3), ("ident", 4), ("ident", 4), ("punct", 4),
        ("directive", 5),
    ]
    assert toks[0].text == "  #define K(a) \\\n    a<<<1, 1>>>()"
    assert directive_name(toks[0]) == "define"
    assert directive_name(toks[1]) == "include"


def test_hash_that_is_not_at_line_start_is_punctuation() -> None:
    assert kinds_and_texts("x # y") == [("ident", "x"), ("punct", "#"), ("ident", "y")]


def test_directive_tokens_keep_offsets_and_lines() -> None:
    source = "int a;\n#define LAUNCH(k) \\\n  k<<<2, 64>>>()\n"
    directive = tokenize(source)[3]
    inner = directive_tokens(source, directive)
    assert [t.text for t in inner][:5] == ["define", "LAUNCH", "(", "k", ")"]
    chevrons = next(t for t in inner if t.text == "<<<")
    assert chevrons.line == 3
    assert source[chevrons.start : chevrons.end] == "<<<"


def test_punctuators_longest_match_including_chevrons() -> None:
    texts = [t.text for t in tokenize("a<<<b>>>(c); x>>=1; p->*q; v<=>w; a...b; s<<=2; ::f")]
    assert texts == [
        "a", "<<<", "b", ">>>", "(", "c", ")", ";", "x", ">>=", "1", ";", "p", "->*", "q", ";",
        "v", "<=>", "w", ";", "a", "...", "b", ";", "s", "<<=", "2", ";", "::", "f",
    ]


def test_nested_template_closers_are_one_token_of_three_angles() -> None:
    texts = [t.text for t in tokenize("vector<vector<vector<int>>> v;")]
    assert ">>>" in texts


def test_code_tokens_drop_comments_and_if_zero_regions() -> None:
    source = (
        "a\n#if 0\nasm(\"x\");\n#if FOO\nb\n#endif\n#else\nc\n#endif\n"
        "#if 0\nd\n#elif 1\ne\n#endif\n/* f */ g\n"
    )
    code, directives = code_tokens(source, tokenize(source))
    assert [t.text for t in code] == ["a", "c", "e", "g"]
    assert [directive_name(d) for d in directives] == ["endif", "endif"]


def test_match_brackets_pairs_and_tolerates_imbalance() -> None:
    toks = tokenize("f(a[1], {b}) ) (")
    partner = match_brackets(toks)
    texts = [t.text for t in toks]
    assert texts[partner[1]] == ")" and partner[partner[1]] == 1
    assert partner[1] == 10 and partner[3] == 5 and partner[7] == 9
    assert partner[-2] == -1 and partner[-1] == -1


def test_angle_matching_skips_parentheses_with_shifts() -> None:
    toks = tokenize("k<T, (N>>1)><<<1, 1>>>")
    partner = match_brackets(toks)
    close = close_angle(toks, 1, partner)
    assert toks[close].text == ">" and close == 9
    assert open_angle(toks, close, partner) == 1
    less = tokenize("if (i < n && j > 0)")
    assert close_angle(less, 3, match_brackets(less)) == -1


def test_join_tokens_keeps_one_space_per_gap() -> None:
    assert join_tokens(tokenize("ns :: k < float,  256 >")) == "ns :: k < float, 256 >"
    assert join_tokens(tokenize("ns::k<float, 256>")) == "ns::k<float, 256>"


def test_tokenize_is_linear_on_hostile_input() -> None:
    hostile = ('R"x(' * 5000) + ("/*" * 5000) + ("#if /*\n" * 2000) + ('"' * 5000)
    started = time.perf_counter()
    toks = tokenize(hostile)
    assert time.perf_counter() - started < 1.0
    assert toks
