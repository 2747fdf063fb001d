#!/usr/bin/env python3
"""Renders a Helm chart the way `helm template` does, without helm.

helm is not installable where topogang's tests run, so this is a small, honest renderer of the
part of Go's text/template and of Sprig/Helm that helm/topogang uses, written from their
sources and documentation (cited next to each piece below):

  * Go text/template (https://pkg.go.dev/text/template; src/text/template/{lex,parse,exec,
    funcs}.go): actions {{ }}, trim markers {{- and -}} (a dash followed/preceded by a space),
    comments {{/* */}} (only right after the delimiter), pipelines with |, variables ($x := ...,
    $x = ..., $ = the data the template was called with), . and field chains on maps and structs,
    parenthesised pipelines and (pipe).Field chains, string/raw string/char/number/bool/nil
    literals, if/else if/else, with/else with/else, range/else over lists and maps, define,
    template, and the builtins and, or (short-circuit, return one of their arguments), not, eq,
    printf (verbs %s %q %d %v %% only). Go's checks are kept: an unknown function or an undefined
    variable is a parse error even in a branch never taken; a field of a nil map value is "nil
    pointer evaluating interface {}.x"; typed parameters refuse values of other types (nil to a
    string parameter, a float64 from values.yaml to an int parameter); eq refuses to compare a
    float64 with an int.
  * Helm (helm.sh/helm pkg/engine, pkg/chart/common, pkg/release/v1/util, pkg/strvals): values are
    values.yaml coalesced with --values files then --set (null deletes a key), numbers from YAML
    are float64 (sigs.k8s.io/yaml goes through JSON), --set integers int64; missing map keys print
    nothing (missingkey=zero, then "<no value>" is removed from each rendered file); templates
    whose name starts with _ are not rendered; include, toYaml (JSON round trip, keys in go-yaml
    v2's order, no trailing newline), fail (aborts: "execution error at (FILE:LINE:COL): MSG");
    .Release (map), .Chart (struct from Chart.yaml), .Capabilities.KubeVersion (--kube-version),
    .Files.Get; values.schema.json is enforced when python3's jsonschema is importable (else a
    note on stderr says it was not); output is split on --- lines, sorted by Helm's install
    order and printed as "---\\n# Source: FILE\\n..." (as helm's main branch, pkg/release/v1/util
    and pkg/action, does).
  * Sprig v3 (github.com/Masterminds/sprig): default (empty = nil, false, 0, "", empty map/list),
    quote, nindent, dict, set, list, has, last, splitList, int (spf13/cast), deepCopy,
    sha256sum, regexFind (Python's re, which accepts a superset of Go's RE2 syntax).

Only the functions above exist here: any other function in a template is a parse error naming it
(function "x" not defined, with the list of those implemented), and any other action a parse
error saying it is not implemented; nothing is skipped. Known differences from real helm: toYaml
is PyYAML's block style (same data, different quoting/line folding, so the config checksum
annotation differs from helm's); printf knows four verbs; no subcharts, .helmignore, lookup, tpl,
hooks' special handling, or --set list indexes.

usage: helm_render.py CHART_DIR [--set k=v ...] [--values FILE ...] [--namespace NS]
                      [--kube-version v1.32.0] [--release-name NAME] [--skip-schema-validation]
                      [--notes]
Prints the manifests like `helm template`; exit 1 with "Error: ..." on stderr on failure.
"""

import argparse
import copy
import functools
import hashlib
import json
import math
import os
import re
import sys
from decimal import Decimal

import yaml

SPACE_CHARS = " \t\r\n"  # text/template lex.go spaceChars: what trim markers remove


# --- errors ------------------------------------------------------------------------------------
class TemplateError(Exception):
    """A parse or execution error, formatted like helm's."""


class ParseError(TemplateError):
    pass


class ExecError(TemplateError):
    def __init__(self, msg, loc=None):
        super().__init__(msg)
        self.msg = msg
        self.loc = loc


class FailError(ExecError):
    """Raised by `fail`: helm reports it as execution error at (location of the call in the
    file being rendered): message."""


class GoError(Exception):
    """An error a Go function returns (or a panic it raises); evalCall wraps it as
    'error calling NAME: ...'."""


class GoInt64(int):
    """An int64 (helm's strvals parses --set integers as int64); a plain int is Go's int."""


class GoStruct:
    """A Go struct value (.Chart, .Capabilities): a missing field is an error, not nil."""

    def __init__(self, type_name, fields, methods=None):
        self.type_name = type_name
        self.fields = fields
        self.methods = methods or {}


class Files:
    """helm's .Files (pkg/engine/files.go): the chart's non-template files; Get returns "" for
    a missing file."""

    type_name = "engine.files"

    def __init__(self, files):
        self.files = files
        # name -> (param types, variadic type, implementation)
        self.methods = {"Get": (["string"], None, lambda name: self.files.get(name, ""))}


MISSING = object()  # "no final value" in a pipeline (exec.go missingVal)


def go_type(v):
    """The Go type of a value, as Go's error messages print it."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, GoInt64):
        return "int64"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    if isinstance(v, (GoStruct, Files)):
        return v.type_name
    return type(v).__name__


GO_PARAM_TYPE = {"string": "string", "int": "int", "map": "map[string]interface {}"}


# --- Go value formatting (fmt) -----------------------------------------------------------------
def go_float(f):
    """fmt's %v for a float64, i.e. strconv.FormatFloat(f, 'g', -1, 64): the shortest digits
    that round-trip, in %e form when the decimal exponent is < -4 or >= 6 (strconv/ftoa.go: "if
    precision was the shortest possible, use precision 6 for this decision"). So a values.yaml
    1000000 prints as 1e+06, the well-known helm surprise."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign, digits, exp = Decimal(repr(f)).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    nd = len(digits)
    dp = nd + exp  # position of the decimal point in the digit string
    ds = "".join(map(str, digits))
    neg = "-" if sign else ""
    x = dp - 1
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return "%s%se%s%02d" % (neg, mant, "-" if x < 0 else "+", abs(x))
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + ds
    if dp >= nd:
        return neg + ds + "0" * (dp - nd)
    return neg + ds[:dp] + "." + ds[dp:]


def go_sprint(v, top=True):
    """fmt.Sprint of a value (text/template printValue: an invalid/nil value prints
    "<no value>", a nil inside a map or slice "<nil>"; maps print sorted: map[k:v k2:v2])."""
    if v is None:
        return "<no value>" if top else "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return "map[" + " ".join("%s:%s" % (k, go_sprint(v[k], False)) for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(go_sprint(x, False) for x in v) + "]"
    if isinstance(v, GoStruct):
        return "{" + " ".join(go_sprint(x, False) for x in v.fields.values()) + "}"
    if isinstance(v, Files):
        return "map[" + " ".join(sorted(v.files)) + "]"
    raise ExecError("cannot print a value of type %s" % type(v).__name__)


def go_quote(s):
    """strconv.Quote (what %q prints for a string)."""
    out = ['"']
    esc = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
           "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    for c in s:
        if c in esc:
            out.append(esc[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append("\\x%02x" % ord(c))
        elif not c.isprintable():
            out.append("\\u%04x" % ord(c) if ord(c) < 0x10000 else "\\U%08x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def strval(v):
    """Sprig's strval: a string as is, anything else fmt.Sprintf("%v")."""
    return v if isinstance(v, str) else go_sprint(v, False)


def go_sprintf(fmt, args):
    """fmt.Sprintf for the verbs the chart uses: %s %q %d %v and %%. Any other verb or a flag is
    refused (not silently approximated)."""
    out = []
    i = 0
    argi = 0

    def bad(verb, a):
        return "%%!%s(%s=%s)" % (verb, go_type(a), go_sprint(a, False)) if a is not None \
            else "%%!%s(<nil>)" % verb

    def fmt_one(verb, a):
        if verb == "v":
            return go_sprint(a, False)
        if verb == "s":
            if isinstance(a, str):
                return a
            if isinstance(a, list):
                return "[" + " ".join(fmt_one("s", x) for x in a) + "]"
            if isinstance(a, dict):
                return "map[" + " ".join("%s:%s" % (k, fmt_one("s", a[k])) for k in sorted(a)) + "]"
            return bad("s", a)
        if verb == "d":
            if isinstance(a, int) and not isinstance(a, bool):
                return str(int(a))
            return bad("d", a)
        if verb == "q":
            if isinstance(a, str):
                return go_quote(a)
            if a is None or isinstance(a, (bool, float)):
                return bad("q", a)
            raise ExecError("printf %%q of a %s is not implemented by helm_render.py" % go_type(a))
        raise ExecError("printf verb %%%s is not implemented by helm_render.py" % verb)

    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(fmt):
            out.append("%!(NOVERB)")
            break
        verb = fmt[i + 1]
        i += 2
        if verb == "%":
            out.append("%")
            continue
        if verb not in "sqdv":
            raise ExecError("printf verb or flag %%%s is not implemented by helm_render.py" % verb)
        if argi >= len(args):
            out.append("%%!%s(MISSING)" % verb)
            continue
        out.append(fmt_one(verb, args[argi]))
        argi += 1
    if argi < len(args):
        out.append("%!(EXTRA " + ", ".join(
            "%s=%s" % (go_type(a), go_sprint(a, False)) for a in args[argi:]) + ")")
    return "".join(out)


# --- truth, emptiness, equality ------------------------------------------------------------------
def is_true(v):
    """exec.go isTrue: nil, false, 0, and empty strings/maps/slices are false; structs true."""
    if v is None:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, (str, dict, list)):
        return len(v) > 0
    if isinstance(v, GoStruct):
        return True
    if isinstance(v, Files):
        return len(v.files) > 0
    raise ExecError("if/with can't use %r" % (v,))


def empty(v):
    """Sprig's empty (defaults.go), which `default` uses: the same as not-true, structs never
    empty."""
    return not is_true(v)


def basic_kind(v):
    """funcs.go basicKind, for eq."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return None  # invalidKind: nil, maps, slices, structs


def go_eq(a, *bs):
    """funcs.go eq (Go 1.18+): arg1 == any of the others; basic kinds must match (int64 and int
    are both intKind; float64 vs int is an error), nil equals only nil, maps/slices are not
    comparable."""
    if not bs:
        raise GoError("missing argument for comparison")
    k1 = basic_kind(a)
    for b in bs:
        k2 = basic_kind(b)
        if k1 != k2:
            if a is not None and b is not None:
                raise GoError("incompatible types for comparison: %s and %s" % (go_type(a), go_type(b)))
            truth = False
        elif k1 is not None:
            truth = a == b
        else:
            if a is not None and b is not None and type(a) is not type(b):
                raise GoError("non-comparable types %s: %s, %s: %s" % (
                    go_sprint(a, False), go_type(a), go_type(b), go_sprint(b, False)))
            if a is None or b is None:
                truth = (a is None) == (b is None)
            else:
                raise GoError("non-comparable type %s: %s" % (go_sprint(b, False), go_type(b)))
        if truth:
            return True
    return False


def go_deep_equal(a, b):
    """reflect.DeepEqual for values a template can hold (types must match: 1 != 1.0)."""
    if go_type(a) != go_type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(go_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(go_deep_equal(x, y) for x, y in zip(a, b))
    return a == b


# --- toYaml ------------------------------------------------------------------------------------
def _goyaml_key_less(a, b):
    """go-yaml v2 sorter.go keyList.Less for two string keys (the order toYaml's output has:
    sigs.k8s.io/yaml marshals through JSON into a map that go-yaml v2 sorts this way)."""
    ar, br = a, b
    for i in range(min(len(ar), len(br))):
        if ar[i] == br[i]:
            continue
        al, bl = ar[i].isalpha(), br[i].isalpha()
        if al and bl:
            return ar[i] < br[i]
        if al or bl:
            return bl
        an = bn = 0
        if ar[i] == "0" or br[i] == "0":
            j = i - 1
            while j >= 0 and ar[j].isdigit():
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and ar[ai].isdigit():
            an = an * 10 + int(ar[ai])
            ai += 1
        bi = i
        while bi < len(br) and br[bi].isdigit():
            bn = bn * 10 + int(br[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ar[i] < br[i]
    return len(ar) < len(br)


def _json_round_trip(v):
    """What json.Marshal + go-yaml's decode leave of a value: float64s that are whole numbers
    below 1e21 become integers (encoding/json writes them without exponent), maps are ordered
    like go-yaml v2 sorts them."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise GoError("json: unsupported value: %s" % go_float(v))
        if v == int(v) and abs(v) < 1e21:
            return int(v)
        return v
    if isinstance(v, list):
        return [_json_round_trip(x) for x in v]
    if isinstance(v, dict):
        keys = sorted((str(k) for k in v), key=functools.cmp_to_key(
            lambda x, y: -1 if _goyaml_key_less(x, y) else (1 if _goyaml_key_less(y, x) else 0)))
        return {k: _json_round_trip(v[k]) for k in keys}
    if isinstance(v, GoStruct):
        return _json_round_trip(v.fields)
    raise GoError("json: unsupported type %s" % go_type(v))


class _BlockDumper(yaml.SafeDumper):
    pass


def to_yaml(v):
    """helm's toYaml (pkg/engine/funcs.go): yaml.Marshal (sigs.k8s.io/yaml: JSON, then go-yaml
    v2), the error swallowed as "", and strings.TrimSuffix(out, "\\n")."""
    try:
        data = _json_round_trip(v)
    except GoError:
        return ""
    out = yaml.dump(data, Dumper=_BlockDumper, default_flow_style=False, sort_keys=False,
                    allow_unicode=True)
    if out.endswith("\n...\n"):  # PyYAML's explicit end after a plain top-level scalar
        out = out[:-4]
    return out[:-1] if out.endswith("\n") else out


# --- Sprig functions ---------------------------------------------------------------------------
def sprig_int(v):
    """Sprig's int = cast.ToInt (spf13/cast number.go): numbers truncate, bools 1/0, nil 0,
    strings through strconv.ParseInt(trimDecimal(s), 0, 0); a failed conversion is 0."""
    if v is None:
        return 0
    if isinstance(v, bool):
        return 1 if v else 0
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v) or not (-2**63 <= v < 2**63):
            return 0
        return int(v)
    if isinstance(v, str):
        s = v
        if s == "":
            return 0
        if "." in s:
            m = re.match(r"^([-+]?\d*)(\.\d*)?$", s)
            if m:
                s = m.group(1)
                s = s + "0" if s in ("-", "+") else (s or "0")
        return _go_parse_int(s) or 0
    return 0


_GO_INT_RE = re.compile(
    r"([-+]?)(0[xX]_?[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[bB]_?[01]+(?:_[01]+)*"
    r"|0[oO]_?[0-7]+(?:_[0-7]+)*|0_?[0-7]+(?:_[0-7]+)*|[1-9][0-9]*(?:_[0-9]+)*|0)")


def _go_parse_int(s):
    """strconv.ParseInt(s, 0, 64): 0x/0b/0o/0 prefixes, underscores between digits; None when s
    is not such an integer or overflows int64."""
    m = _GO_INT_RE.fullmatch(s)
    if not m:
        return None
    sign, body = m.groups()
    b = body.replace("_", "")
    if b[:2].lower() in ("0x", "0b", "0o"):
        n = int(b[2:], {"x": 16, "b": 2, "o": 8}[b[1].lower()])
    elif len(b) > 1 and b[0] == "0":
        n = int(b[1:], 8)
    else:
        n = int(b)
    n = -n if sign == "-" else n
    return n if -2**63 <= n < 2**63 else None


def sprig_set(d, key, value):
    if d is None:
        raise GoError("assignment to entry in nil map")
    d[key] = value
    return d


def sprig_has(needle, haystack):
    if haystack is None:
        return False
    if not isinstance(haystack, list):
        raise GoError("Cannot find has on type %s" % _go_kind(haystack))
    return any(go_deep_equal(needle, item) for item in haystack)


def sprig_last(lst):
    if lst is None:
        raise GoError("runtime error: invalid memory address or nil pointer dereference")
    if not isinstance(lst, list):
        raise GoError("Cannot find last on type %s" % _go_kind(lst))
    return lst[-1] if lst else None


def _go_kind(v):
    return {"map[string]interface {}": "map", "[]interface {}": "slice"}.get(go_type(v), go_type(v))


def sprig_regex_find(regex, s):
    try:
        m = re.search(regex, s)
    except re.error as e:  # regexp.MustCompile panics
        raise GoError("regexp: Compile(%s): %s" % (go_quote(regex), e))
    return m.group(0) if m else ""


def sprig_split_list(sep, orig):
    if sep == "":
        return list(orig)
    return orig.split(sep)


def sprig_dict(*kv):
    d = {}
    for i in range(0, len(kv), 2):
        k = strval(kv[i])
        d[k] = kv[i + 1] if i + 1 < len(kv) else ""
    return d


def sprig_quote(*args):
    return " ".join(go_quote(strval(a)) for a in args if a is not None)


def sprig_default(d, *given):
    if not given or empty(given[0]):
        return d
    return given[0]


def sprig_fail(msg):
    raise FailError(msg)


# name -> (fixed parameter types, variadic element type or None, implementation). Parameter
# types: "any" (interface{}), "value" (reflect.Value: the builtins), "string", "int", "map".
# Signatures from text/template funcs.go, Sprig functions.go and helm pkg/engine; behaviour as
# documented at https://pkg.go.dev/text/template#hdr-Functions ("and ... Evaluation proceeds
# through the arguments left to right and returns when the result is determined") and
# https://helm.sh/docs/chart_template_guide/function_list/ (and/or return "the first empty
# argument, or the last argument" / "the first non-empty argument, or the last argument").
FUNCS = {
    # text/template builtins (and/or are special-cased in eval_call: they short-circuit)
    "and": (["value"], "value", None),
    "or": (["value"], "value", None),
    "not": (["value"], None, lambda v: not is_true(v)),
    "eq": (["value"], "value", go_eq),
    "printf": (["string"], "any", lambda f, *a: go_sprintf(f, list(a))),
    # helm
    "include": (["string", "any"], None, None),  # bound per render (needs the templates)
    "toYaml": (["any"], None, to_yaml),
    "fail": (["string"], None, sprig_fail),
    # Sprig
    "default": (["any"], "any", sprig_default),
    "quote": ([], "any", sprig_quote),
    "nindent": (["int", "string"], None,
                lambda n, s: "\n" + " " * n + s.replace("\n", "\n" + " " * n)),
    "dict": ([], "any", sprig_dict),
    "set": (["map", "string", "any"], None, sprig_set),
    "list": ([], "any", lambda *a: list(a)),
    "has": (["any", "any"], None, sprig_has),
    "last": (["any"], None, sprig_last),
    "splitList": (["string", "string"], None, sprig_split_list),
    "int": (["any"], None, sprig_int),
    "deepCopy": (["any"], None, copy.deepcopy),
    "sha256sum": (["string"], None, lambda s: hashlib.sha256(s.encode()).hexdigest()),
    "regexFind": (["string", "string"], None, sprig_regex_find),
}


# --- lexer ---------------------------------------------------------------------------------------
class Tok:
    __slots__ = ("typ", "val", "pos")

    def __init__(self, typ, val, pos):
        self.typ, self.val, self.pos = typ, val, pos

    def __repr__(self):
        return "%s %r" % (self.typ, self.val)


KEYWORDS = {"block", "break", "continue", "define", "else", "end", "if", "range", "template", "with"}
GO_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", "'": "'", '"': '"'}
NUMBER_RE = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?"
    r"|0[bB][01_]+|0[oO][0-7_]+"
    r"|(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?)i?")


def _is_alnum(c):
    return c == "_" or c.isalpha() or c.isdigit()


class Source:
    def __init__(self, name, text):
        self.name, self.text = name, text

    def loc(self, pos):
        """name:line:col as Go's ErrorContext prints it (line 1-based, column a 0-based byte
        offset in the line)."""
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1)
        return "%s:%d:%d" % (self.name, line, col)

    def line(self, pos):
        return "%s:%d" % (self.name, self.text.count("\n", 0, pos) + 1)


def go_unquote(body, src, pos):
    """The body of an interpreted string or char literal (strconv.Unquote's escapes)."""
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ParseError("template: %s: invalid syntax" % src.line(pos))
        e = body[i + 1]
        if e in GO_ESCAPES:
            out.append(GO_ESCAPES[e])
            i += 2
        elif e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            h = body[i + 2:i + 2 + n]
            if len(h) != n or not re.fullmatch("[0-9a-fA-F]+", h):
                raise ParseError("template: %s: invalid syntax" % src.line(pos))
            out.append(chr(int(h, 16)))
            i += 2 + n
        elif e in "01234567":
            o = body[i + 1:i + 4]
            if not re.fullmatch("[0-7]{3}", o):
                raise ParseError("template: %s: invalid syntax" % src.line(pos))
            out.append(chr(int(o, 8)))
            i += 4
        else:
            raise ParseError("template: %s: invalid syntax" % src.line(pos))
    return "".join(out)


def lex(src):
    """Splits a template into ('text', str, pos) and ('action', [Tok], pos) items, comments
    dropped, trim markers applied to the neighbouring text (lex.go: "{{- " trims the preceding
    text's trailing spaceChars, " -}}" the following text's leading ones)."""
    s = src.text
    n = len(s)
    items = []
    pos = 0
    trim_next = False
    while True:
        i = s.find("{{", pos)
        text_end = n if i < 0 else i
        start = pos
        if trim_next:
            while start < text_end and s[start] in SPACE_CHARS:
                start += 1
        if i < 0:
            if start < n:
                items.append(("text", s[start:], start))
            return items
        p = i + 2
        trim_left = p + 1 < n and s[p] == "-" and s[p + 1] in SPACE_CHARS
        end = text_end
        if trim_left:
            while end > start and s[end - 1] in SPACE_CHARS:
                end -= 1
            p += 2
        if end > start:
            items.append(("text", s[start:end], start))
        if s.startswith("/*", p):  # a comment: "/*" right after the delimiter (and trim marker)
            j = s.find("*/", p + 2)
            if j < 0:
                raise ParseError("template: %s: unclosed comment" % src.line(i))
            q = j + 2
            if s.startswith("}}", q):
                pos, trim_next = q + 2, False
            elif q < n and s[q] in SPACE_CHARS and s.startswith("-}}", q + 1):
                pos, trim_next = q + 4, True
            else:
                raise ParseError("template: %s: comment ends before closing delimiter" % src.line(i))
            continue
        toks, pos, trim_next = lex_action(src, p, i)
        items.append(("action", toks, i))


def lex_action(src, p, start):
    """Tokens of one action from p to its closing delimiter: returns (tokens, position after the
    delimiter, whether it ended with a right trim marker)."""
    s = src.text
    n = len(s)
    toks = []
    depth = 0

    def err(msg, at=None):
        raise ParseError("template: %s: %s" % (src.line(start if at is None else at), msg))

    def need_terminator(q):
        # lex.go atTerminator: space, EOF, . , | : ) ( or the right delimiter
        if q >= n or s[q] in SPACE_CHARS or s[q] in ".,|:)(" or s.startswith("}}", q):
            return
        err("bad character %r" % s[q], q)

    while True:
        if p >= n:
            err("unclosed action")
        c = s[p]
        if s.startswith("}}", p) or (c in SPACE_CHARS and s.startswith("-}}", p + 1)):
            if depth:
                err("unclosed left paren")
            if s.startswith("}}", p):
                return toks, p + 2, False
            return toks, p + 4, True
        if c in SPACE_CHARS:
            if not toks or toks[-1].typ != "space":
                toks.append(Tok("space", " ", p))
            p += 1
        elif c == "|":
            toks.append(Tok("pipe", c, p))
            p += 1
        elif c == "(":
            depth += 1
            toks.append(Tok("lparen", c, p))
            p += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                err("unexpected right paren", p)
            toks.append(Tok("rparen", c, p))
            p += 1
        elif c == ",":
            toks.append(Tok("comma", c, p))
            p += 1
        elif c == ":":
            if not s.startswith(":=", p):
                err("expected :=", p)
            toks.append(Tok("declare", ":=", p))
            p += 2
        elif c == "=":
            toks.append(Tok("assign", "=", p))
            p += 1
        elif c == '"':
            q = p + 1
            while True:
                if q >= n or s[q] == "\n":
                    err("unterminated quoted string", p)
                if s[q] == "\\":
                    q += 2
                    continue
                if s[q] == '"':
                    break
                q += 1
            toks.append(Tok("string", go_unquote(s[p + 1:q], src, p), p))
            p = q + 1
        elif c == "`":
            q = s.find("`", p + 1)
            if q < 0:
                err("unterminated raw quoted string", p)
            toks.append(Tok("string", s[p + 1:q].replace("\r", ""), p))
            p = q + 1
        elif c == "'":
            q = p + 1
            while True:
                if q >= n or s[q] == "\n":
                    err("unterminated character constant", p)
                if s[q] == "\\":
                    q += 2
                    continue
                if s[q] == "'":
                    break
                q += 1
            ch = go_unquote(s[p + 1:q], src, p)
            if len(ch) != 1:
                err("malformed character constant: %s" % s[p:q + 1], p)
            toks.append(Tok("char", ord(ch), p))
            p = q + 1
        elif c == "$":
            q = p + 1
            while q < n and _is_alnum(s[q]):
                q += 1
            need_terminator(q)
            toks.append(Tok("var", s[p:q], p))
            p = q
        elif c == "." and p + 1 < n and s[p + 1].isdigit():
            p = _lex_number(src, p, toks, err)
        elif c == ".":
            q = p + 1
            while q < n and _is_alnum(s[q]):
                q += 1
            if q == p + 1:
                toks.append(Tok("dot", ".", p))
            else:
                need_terminator(q)
                toks.append(Tok("field", s[p + 1:q], p))
            p = q
        elif c.isdigit() or (c in "+-" and p + 1 < n and (s[p + 1].isdigit() or s[p + 1] == ".")):
            p = _lex_number(src, p, toks, err)
        elif _is_alnum(c):
            q = p
            while q < n and _is_alnum(s[q]):
                q += 1
            word = s[p:q]
            need_terminator(q)
            if word in KEYWORDS:
                toks.append(Tok("keyword", word, p))
            elif word in ("true", "false"):
                toks.append(Tok("bool", word == "true", p))
            elif word == "nil":
                toks.append(Tok("nil", None, p))
            else:
                toks.append(Tok("ident", word, p))
            p = q
        else:
            err("unrecognized character in action: %r" % c, p)


def _lex_number(src, p, toks, err):
    s = src.text
    m = NUMBER_RE.match(s, p)
    q = m.end() if m else p
    if q == p or (q < len(s) and _is_alnum(s[q])):
        err("bad number syntax: %r" % s[p:q + 1], p)
    toks.append(Tok("number", s[p:q], p))
    return q


# --- parse tree ----------------------------------------------------------------------------------
class Node:
    pos = 0


class ListNode(Node):
    def __init__(self, nodes):
        self.nodes = nodes


class TextNode(Node):
    def __init__(self, text, pos):
        self.text, self.pos = text, pos


class ActionNode(Node):
    def __init__(self, pipe, pos):
        self.pipe, self.pos = pipe, pos


class ControlNode(Node):  # if / with / range
    def __init__(self, kind, pipe, body, else_body, pos):
        self.kind, self.pipe, self.body, self.else_body, self.pos = kind, pipe, body, else_body, pos


class TemplateNode(Node):
    def __init__(self, name, pipe, pos):
        self.name, self.pipe, self.pos = name, pipe, pos


class PipeNode(Node):
    def __init__(self, decl, is_assign, cmds, pos):
        self.decl, self.is_assign, self.cmds, self.pos = decl, is_assign, cmds, pos

    def __str__(self):
        d = (", ".join(self.decl) + (" = " if self.is_assign else " := ")) if self.decl else ""
        return d + " | ".join(str(c) for c in self.cmds)


class CommandNode(Node):
    def __init__(self, args, pos):
        self.args, self.pos = args, pos

    def __str__(self):
        return " ".join("(%s)" % a if isinstance(a, PipeNode) else str(a) for a in self.args)


class FieldNode(Node):
    def __init__(self, idents, pos):
        self.idents, self.pos = idents, pos

    def __str__(self):
        return "".join("." + i for i in self.idents)


class VariableNode(Node):
    def __init__(self, idents, pos):
        self.idents, self.pos = idents, pos

    def __str__(self):
        return ".".join(self.idents)


class ChainNode(Node):
    def __init__(self, node, fields, pos):
        self.node, self.fields, self.pos = node, fields, pos

    def __str__(self):
        return "(%s)" % self.node + "".join("." + f for f in self.fields)


class IdentifierNode(Node):
    def __init__(self, name, pos):
        self.name, self.pos = name, pos

    def __str__(self):
        return self.name


class LiteralNode(Node):
    """dot, nil, bool, string or number (kind says which)."""

    def __init__(self, kind, value, text, pos):
        self.kind, self.value, self.text, self.pos = kind, value, text, pos

    def __str__(self):
        return self.text


class NumberNode(LiteralNode):
    """parse.go newNumber: a number literal is an int when strconv.ParseInt(text, 0, 64) takes
    it, a float when ParseFloat does; a float that is a whole number is an int too. A char
    constant ('a') is its rune value."""

    def __init__(self, text, pos, src):
        self.is_rune = isinstance(text, int)
        if self.is_rune:
            super().__init__("number", None, repr(chr(text)), pos)
            self.is_int, self.int_val, self.is_float, self.float_val = True, text, True, float(text)
            return
        super().__init__("number", None, text, pos)
        if text.endswith("i"):
            raise ParseError("template: %s: complex number %s is not implemented by helm_render.py"
                             % (src.line(pos), text))
        self.int_val = _go_parse_int(text)
        self.is_int = self.int_val is not None
        self.is_float, self.float_val = False, None
        if self.is_int:
            self.is_float, self.float_val = True, float(self.int_val)
        else:
            body = text.replace("_", "")
            try:
                if re.match(r"[-+]?0[xX]", body):
                    f = float.fromhex(body)
                else:
                    f = float(body)
            except ValueError:
                f = None
            if f is not None and not math.isinf(f):
                if not re.search(r"[.eEpP]", text):
                    raise ParseError("template: %s: integer overflow: %s" % (src.line(pos), go_quote(text)))
                self.is_float, self.float_val = True, f
                if f == int(f) and -2**63 <= f < 2**63:
                    self.is_int, self.int_val = True, int(f)
        if not self.is_int and not self.is_float:
            raise ParseError("template: %s: illegal number syntax: %s" % (src.line(pos), go_quote(text)))


class Cursor:
    """Reads the tokens of one action."""

    def __init__(self, toks, pos, src):
        self.toks, self.i, self.pos, self.src = toks, 0, pos, src

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else Tok("end", "}}", self.pos)

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def backup(self):
        self.i -= 1

    def peek_non_space(self):
        t = self.next_non_space()
        self.backup()
        return t

    def next_non_space(self):
        t = self.next()
        while t.typ == "space":
            t = self.next()
        return t

    def err(self, msg):
        raise ParseError("template: %s: %s" % (self.src.line(self.pos), msg))


class Parser:
    """parse.go, for one file: returns the file's own tree and its {{define}}s."""

    def __init__(self, src, funcs):
        self.src = src
        self.funcs = funcs
        self.items = lex(src)
        self.i = 0
        self.vars = ["$"]
        self.defines = {}

    def parse(self):
        body, stop = self.item_list(top=True)
        return body, self.defines

    def item_list(self, top=False):
        nodes = []
        while self.i < len(self.items):
            kind, val, pos = self.items[self.i]
            self.i += 1
            if kind == "text":
                nodes.append(TextNode(val, pos))
                continue
            cur = Cursor(val, pos, self.src)
            t = cur.next_non_space()
            if t.typ == "keyword":
                if t.val == "end":
                    self.expect_end(cur, "end")
                    if top:
                        cur.err("unexpected {{end}}")
                    return ListNode(nodes), ("end", cur)
                if t.val == "else":
                    if top:
                        cur.err("unexpected {{else}}")
                    return ListNode(nodes), ("else", cur)
                if t.val in ("if", "with", "range"):
                    nodes.append(self.control(t.val, cur, pos))
                    continue
                if t.val == "template":
                    nodes.append(self.template_action(cur, pos))
                    continue
                if t.val == "define":
                    if not top:
                        cur.err("unexpected <define> in command")
                    self.definition(cur)
                    continue
                cur.err("{{%s}} is not implemented by helm_render.py" % t.val)
            cur.backup()
            nodes.append(ActionNode(self.pipeline(cur, "command", "end"), pos))
        if not top:
            raise ParseError("template: %s: unexpected EOF" % self.src.line(len(self.src.text)))
        return ListNode(nodes), None

    def expect_end(self, cur, context):
        t = cur.next_non_space()
        if t.typ != "end":
            cur.err("unexpected %s in %s" % (t.val, context))

    def definition(self, cur):
        t = cur.next_non_space()
        if t.typ != "string":
            cur.err("name of template must be a string literal in define clause")
        self.expect_end(cur, "define clause")
        saved = self.vars
        self.vars = ["$"]
        body, stop = self.item_list()
        if stop[0] != "end":
            stop[1].err("unexpected {{else}} in define clause")
        self.vars = saved
        self.defines[t.val] = body  # a later definition replaces an earlier one, as in Go

    def template_action(self, cur, pos):
        t = cur.next_non_space()
        if t.typ != "string":
            cur.err("unexpected %s in template clause" % t.val)
        pipe = None
        if cur.peek_non_space().typ != "end":
            pipe = self.pipeline(cur, "template clause", "end")
        else:
            cur.next_non_space()
        return TemplateNode(t.val, pipe, pos)

    def control(self, kind, cur, pos):
        mark = len(self.vars)
        pipe = self.pipeline(cur, kind, "end")
        body, stop = self.item_list()
        if stop is None:
            raise ParseError("template: %s: unexpected EOF" % self.src.line(len(self.src.text)))
        else_body = None
        if stop[0] == "else":
            c2 = stop[1]
            nxt = c2.peek_non_space()
            if nxt.typ == "keyword" and nxt.val == kind and kind in ("if", "with"):
                # {{else if ...}} / {{else with ...}}: a nested control that takes the {{end}}
                c2.next_non_space()
                else_body = ListNode([self.control(kind, c2, c2.pos)])
            else:
                self.expect_end(c2, "else")
                else_body, stop2 = self.item_list()
                if stop2 is None:
                    raise ParseError("template: %s: unexpected EOF" % self.src.line(len(self.src.text)))
                if stop2[0] != "end":
                    stop2[1].err("expected end; found {{else}}")
        del self.vars[mark:]
        return ControlNode(kind, pipe, body, else_body, pos)

    def pipeline(self, cur, context, end):
        decl = []
        is_assign = False
        t = cur.peek_non_space()
        if t.typ == "var":
            save = cur.i
            v = cur.next_non_space()
            nxt = cur.next_non_space()
            if nxt.typ in ("declare", "assign"):
                decl = [v.val]
                is_assign = nxt.typ == "assign"
            elif nxt.typ == "comma" and context == "range":
                v2 = cur.next_non_space()
                if v2.typ != "var":
                    cur.err("range can only initialize variables")
                if cur.next_non_space().typ != "declare":
                    cur.err("range can only initialize variables")
                decl = [v.val, v2.val]
            else:
                cur.i = save
            if decl:
                if is_assign:
                    self.use_var(cur, v.val)
                else:
                    self.vars.extend(decl)
        cmds = []
        while True:
            t = cur.next_non_space()
            if t.typ == end:
                break
            if t.typ in ("end", "rparen"):
                cur.err("unexpected %s in %s" % (t.val, context))
            cur.backup()
            cmds.append(self.command(cur, end))
            if cur.peek().typ == "pipe":
                cur.next()
        if not cmds:
            cur.err("missing value for %s" % context)
        for k, c in enumerate(cmds[1:], start=2):
            if isinstance(c.args[0], LiteralNode):
                cur.err("non executable command in pipeline stage %d" % k)
        return PipeNode(decl, is_assign, cmds, cur.pos)

    def command(self, cur, end):
        args = []
        pos = cur.peek_non_space().pos
        while True:
            cur.peek_non_space()
            while cur.peek().typ == "space":
                cur.next()
            op = self.operand(cur)
            if op is not None:
                args.append(op)
            t = cur.next()
            if t.typ == "space":
                continue
            if t.typ in ("end", "rparen"):
                cur.backup()
            elif t.typ == "pipe":
                cur.backup()
            else:
                cur.err("unexpected %s in operand" % t.val)
            break
        if not args:
            cur.err("empty command")
        return CommandNode(args, pos)

    def operand(self, cur):
        node = self.term(cur)
        if node is None:
            return None
        if cur.peek().typ == "field":
            fields = []
            while cur.peek().typ == "field":
                fields.append(cur.next().val)
            if isinstance(node, FieldNode):
                node = FieldNode(node.idents + fields, node.pos)
            elif isinstance(node, VariableNode):
                node = VariableNode(node.idents + fields, node.pos)
            elif isinstance(node, LiteralNode):
                cur.err("unexpected . after term %r" % str(node))
            else:
                node = ChainNode(node, fields, node.pos)
        return node

    def term(self, cur):
        t = cur.next_non_space()
        if t.typ == "ident":
            if t.val not in self.funcs:
                cur.err('function "%s" not defined (helm_render.py implements only: %s)'
                        % (t.val, " ".join(sorted(self.funcs))))
            return IdentifierNode(t.val, t.pos)
        if t.typ == "dot":
            return LiteralNode("dot", None, ".", t.pos)
        if t.typ == "nil":
            return LiteralNode("nil", None, "nil", t.pos)
        if t.typ == "var":
            self.use_var(cur, t.val)
            return VariableNode([t.val], t.pos)
        if t.typ == "field":
            return FieldNode([t.val], t.pos)
        if t.typ == "bool":
            return LiteralNode("bool", t.val, "true" if t.val else "false", t.pos)
        if t.typ in ("number", "char"):
            return NumberNode(t.val, t.pos, self.src)
        if t.typ == "string":
            return LiteralNode("string", t.val, go_quote(t.val), t.pos)
        if t.typ == "lparen":
            return self.pipeline(cur, "parenthesized pipeline", "rparen")
        cur.backup()
        return None

    def use_var(self, cur, name):
        if name not in self.vars:
            cur.err("undefined variable %r" % name)


# --- execution -----------------------------------------------------------------------------------
class Engine:
    """The templates of one chart, parsed together as helm does (every file's {{define}}s are
    visible to every file)."""

    def __init__(self, sources):
        """sources: {template name: text}."""
        self.sources = {n: Source(n, t) for n, t in sources.items()}
        self.trees = {}
        self.defines = {}
        funcs = set(FUNCS)
        # helm parses in sortTemplates order (deepest paths first, then reverse lexical), so a
        # later {{define}} of the same name wins in that order.
        for name in helm_template_order(self.sources):
            tree, defs = Parser(self.sources[name], funcs).parse()
            self.trees[name] = tree
            for k, v in defs.items():
                self.defines[k] = (v, self.sources[name])
        self.include_depth = {}

    def execute(self, name, data):
        st = State(self, self.sources[name])
        st.vars = [["$", data]]
        run_deep(st.walk, data, self.trees[name])
        return "".join(st.out)


def run_deep(fn, *args):
    """Runs fn with room for helm's 1000 nested includes (about 12 Python frames each); a deeper
    recursion is reported as helm reports it, not as a Python traceback."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        return fn(*args)
    except RecursionError:
        raise ExecError("rendering template has a nested reference name: unable to execute template "
                        "(recursion too deep)")
    finally:
        sys.setrecursionlimit(old)


def helm_template_order(names):
    """pkg/engine sortTemplates: sort.Reverse(byPathLen): more slashes first, then reverse
    lexical order. Templates are parsed and executed in this order (which matters only when a
    template mutates shared values with set)."""
    return sorted(names, key=lambda n: (n.count("/"), n), reverse=True)


class State:
    def __init__(self, engine, src):
        self.engine = engine
        self.src = src
        self.vars = []
        self.out = []
        self.pos = 0

    def err(self, msg):
        raise ExecError("template: %s: %s" % (self.src.loc(self.pos), msg), self.src.loc(self.pos))

    # -- walking
    def walk(self, dot, node):
        if isinstance(node, ListNode):
            for n in node.nodes:
                self.walk(dot, n)
        elif isinstance(node, TextNode):
            self.out.append(node.text)
        elif isinstance(node, ActionNode):
            self.pos = node.pos
            # A declared variable ({{ $x := ... }}) outlives the action: it is popped at the end
            # of the enclosing if/with/range (exec.go walkIfOrWith: defer s.pop(s.mark())).
            val = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.out.append(go_sprint(val))
        elif isinstance(node, ControlNode):
            self.pos = node.pos
            mark = len(self.vars)
            if node.kind == "range":
                self.walk_range(dot, node)
            else:
                val = self.eval_pipeline(dot, node.pipe)
                if is_true(val):
                    self.walk(val if node.kind == "with" else dot, node.body)
                elif node.else_body is not None:
                    self.walk(dot, node.else_body)
            del self.vars[mark:]
        elif isinstance(node, TemplateNode):
            self.pos = node.pos
            val = self.eval_pipeline(dot, node.pipe) if node.pipe else None
            try:
                self.out.append(self.run_define(node.name, val))
            except GoError as e:
                self.pos = node.pos
                self.err(str(e))
        else:
            raise ExecError("unknown node %r" % node)

    def walk_range(self, dot, node):
        val = self.eval_pipeline(dot, node.pipe)
        mark = len(self.vars)

        def one(index, elem):
            if len(node.pipe.decl) > 0:
                self.vars[-1][1] = elem
            if len(node.pipe.decl) > 1:
                self.vars[-2][1] = index
            self.walk(elem, node.body)
            del self.vars[mark:]

        if isinstance(val, list) and val:
            for i, e in enumerate(val):
                one(i, e)
            return
        if isinstance(val, dict) and val:
            for k in sorted(val):
                one(k, val[k])
            return
        if val is not None and not isinstance(val, (list, dict)):
            self.err("range can't iterate over %s" % go_sprint(val))
        if node.else_body is not None:
            self.walk(dot, node.else_body)

    def run_define(self, name, data):
        if name not in self.engine.defines:
            self.err('template "%s" not defined' % name)
        depth = self.engine.include_depth.get(name, 0)
        if depth > 1000:  # helm's recursionMaxNums
            raise GoError("rendering template has a nested reference name: %s: unable to execute template" % name)
        self.engine.include_depth[name] = depth + 1
        try:
            body, src = self.engine.defines[name]
            st = State(self.engine, src)
            st.vars = [["$", data]]
            st.walk(data, body)
            return "".join(st.out)
        finally:
            self.engine.include_depth[name] = depth

    # -- evaluation
    def eval_pipeline(self, dot, pipe):
        value = MISSING
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
        for v in pipe.decl:
            if pipe.is_assign:
                self.set_var(v, value)
            else:
                self.vars.append([v, value])
        return value

    def set_var(self, name, value):
        for entry in reversed(self.vars):
            if entry[0] == name:
                entry[1] = value
                return
        self.err("undefined variable: %s" % name)

    def var_value(self, name):
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1]
        self.err("undefined variable: %s" % name)

    def not_a_function(self, args, final):
        if len(args) > 1 or final is not MISSING:
            self.err("can't give argument to non-function %s" % args[0])

    def eval_command(self, dot, cmd, final):
        first = cmd.args[0]
        self.pos = first.pos
        if isinstance(first, FieldNode):
            return self.eval_field_chain(dot, dot, False, first.idents, cmd.args, final)
        if isinstance(first, ChainNode):
            return self.eval_chain(dot, first, cmd.args, final)
        if isinstance(first, IdentifierNode):
            return self.eval_function(dot, first, cmd.args, final)
        if isinstance(first, PipeNode):
            self.not_a_function(cmd.args, final)
            return self.eval_pipeline(dot, first)
        if isinstance(first, VariableNode):
            return self.eval_variable(dot, first, cmd.args, final)
        self.not_a_function(cmd.args, final)
        if first.kind == "dot":
            return dot
        if first.kind == "nil":
            self.err("nil is not a command")
        if first.kind == "number":
            return self.ideal_constant(first)
        return first.value  # bool or string

    def ideal_constant(self, n):
        if n.is_float and not n.is_rune and not re.match(r"[-+]?0[xX]", n.text) \
                and re.search(r"[.eEpP]", n.text):
            return n.float_val
        if n.is_int:
            if not -2**63 <= n.int_val < 2**63:
                self.err("%s overflows int" % n.text)
            return n.int_val
        self.err("%s overflows int" % n.text)

    def eval_variable(self, dot, node, args, final):
        value = self.var_value(node.idents[0])
        if len(node.idents) == 1:
            if args is not None:
                self.not_a_function(args, final)
            return value
        return self.eval_field_chain(dot, value, False, node.idents[1:], args, final)

    def eval_chain(self, dot, node, args, final):
        if isinstance(node.node, LiteralNode) and node.node.kind == "nil":
            self.err("indirection through explicit nil in %s" % node)
        recv = self.eval_arg(dot, "any", node.node)
        return self.eval_field_chain(dot, recv, False, node.fields, args, final)

    def eval_field_chain(self, dot, recv, recv_iface, idents, args, final):
        return self.eval_field_chain_iface(dot, recv, recv_iface, idents, args, final)[0]

    def eval_field_chain_iface(self, dot, recv, recv_iface, idents, args, final):
        """exec.go evalFieldChain. recv_iface: the receiver came out of a map (an interface{}
        value), so a nil one is "nil pointer evaluating interface {}.X"; a nil that a variable,
        dot or a parenthesised pipeline holds is an invalid value, whose fields are silently
        invalid too (exec.go evalField: `if !receiver.IsValid() { return zero }`)."""
        for name in idents[:-1]:
            recv, recv_iface = self.eval_field(dot, name, None, MISSING, recv, recv_iface)
        return self.eval_field(dot, idents[-1], args, final, recv, recv_iface)

    def eval_field(self, dot, name, args, final, recv, recv_iface):
        if recv is None:
            if recv_iface:
                self.err("nil pointer evaluating interface {}.%s" % name)
            return None, False
        methods = getattr(recv, "methods", None)
        if methods and name in methods:
            return self.eval_call(dot, methods[name], name, args, final), False
        has_args = (args is not None and len(args) > 1) or final is not MISSING
        if isinstance(recv, GoStruct):
            if name in recv.fields:
                if has_args:
                    self.err("%s has arguments but cannot be invoked as function" % name)
                return recv.fields[name], False
        elif isinstance(recv, dict):
            if has_args:
                self.err("%s is not a method but has arguments" % name)
            return recv.get(name), True  # missingkey=zero: a missing key is nil
        self.err("can't evaluate field %s in type %s" % (name, go_type(recv)))

    def eval_function(self, dot, node, args, final):
        spec = FUNCS[node.name]
        if node.name == "include":
            spec = (spec[0], spec[1], self.run_define)
        return self.eval_call(dot, spec, node.name, args, final)

    def eval_call(self, dot, spec, name, args, final):
        """exec.go evalCall: arguments are checked against the parameter types; and/or evaluate
        their arguments lazily and return the deciding one (Go 1.18+)."""
        params, variadic, impl = spec
        call_pos = self.pos  # the function's (command's) position: where Go reports its errors
        args = args[1:] if args is not None else []
        num_in = len(args) + (final is not MISSING)
        if variadic is not None:
            if num_in < len(params):
                self.err("wrong number of args for %s: want at least %d got %d" % (name, len(params), len(args)))
        elif num_in != len(params):
            self.err("wrong number of args for %s: want %d got %d" % (name, len(params), num_in))
        if name in ("and", "or"):
            v = None
            for a in args:
                v = self.eval_arg(dot, "value", a)
                if is_true(v) == (name == "or"):
                    return v
            if final is not MISSING:
                v = final
            return v
        argv = []
        for i, a in enumerate(args):
            argv.append(self.eval_arg(dot, params[i] if i < len(params) else variadic, a))
        if final is not MISSING:
            k = num_in - 1
            argv.append(self.validate(final, params[k] if k < len(params) else variadic))
        try:
            return impl(*argv)
        except FailError as e:
            # helm reports a fail at the call in the file being rendered that led to it
            self.pos = call_pos
            raise
        except ExecError as e:
            if name != "include":
                raise
            self.pos = call_pos
            self.err("error calling include: %s" % e.msg)
        except GoError as e:
            self.pos = call_pos
            self.err("error calling %s: %s" % (name, e))

    def validate_iface(self, value_iface, typ):
        """A nil that a field chain read out of a map is a nil interface{} value, which a typed
        parameter refuses as such (exec.go validateType: "wrong type for value; expected string;
        got interface {}"); a nil variable is an invalid value (validate below)."""
        value, iface = value_iface
        if value is None and iface and typ in GO_PARAM_TYPE:
            self.err("wrong type for value; expected %s; got interface {}" % GO_PARAM_TYPE[typ])
        return self.validate(value, typ)

    def validate(self, value, typ):
        """exec.go validateType for the parameter types used here."""
        if typ in ("any", "value"):
            return value
        if value is None:
            if typ == "map":
                return None  # a nil map (set then fails: assignment to entry in nil map)
            self.err("invalid value; expected %s" % GO_PARAM_TYPE[typ])
        ok = {"string": isinstance(value, str),
              "int": type(value) is int,
              "map": isinstance(value, dict)}[typ]
        if not ok:
            self.err("wrong type for value; expected %s; got %s" % (GO_PARAM_TYPE[typ], go_type(value)))
        return value

    def eval_arg(self, dot, typ, node):
        """exec.go evalArg: literals are typed by the parameter, everything else evaluated and
        then checked."""
        self.pos = node.pos
        if isinstance(node, LiteralNode) and node.kind == "dot":
            return self.validate(dot, typ)
        if isinstance(node, LiteralNode) and node.kind == "nil":
            if typ in ("any", "value", "map"):
                return None
            self.err("cannot assign nil to %s" % GO_PARAM_TYPE[typ])
        if isinstance(node, FieldNode):
            return self.validate_iface(
                self.eval_field_chain_iface(dot, dot, False, node.idents, [node], MISSING), typ)
        if isinstance(node, VariableNode):
            if len(node.idents) == 1:
                return self.validate(self.var_value(node.idents[0]), typ)
            return self.validate_iface(self.eval_field_chain_iface(
                dot, self.var_value(node.idents[0]), False, node.idents[1:], None, MISSING), typ)
        if isinstance(node, ChainNode):
            if isinstance(node.node, LiteralNode) and node.node.kind == "nil":
                self.err("indirection through explicit nil in %s" % node)
            recv = self.eval_arg(dot, "any", node.node)
            return self.validate_iface(
                self.eval_field_chain_iface(dot, recv, False, node.fields, None, MISSING), typ)
        if isinstance(node, PipeNode):
            return self.validate(self.eval_pipeline(dot, node), typ)
        if isinstance(node, IdentifierNode):
            return self.validate(self.eval_function(dot, node, [node], MISSING), typ)
        # a literal
        if typ in ("any", "value"):
            if node.kind == "number":
                return self.ideal_constant(node)
            return node.value
        if typ == "string":
            if node.kind == "string":
                return node.value
            self.err("expected string; found %s" % node)
        if typ == "int":
            if node.kind == "number" and node.is_int:
                return node.int_val
            self.err("expected integer; found %s" % node)
        self.err("can't handle %s for arg of type %s" % (node, GO_PARAM_TYPE[typ]))


# --- helm: chart, values, rendering ---------------------------------------------------------------
class _ValuesLoader(yaml.SafeLoader):
    """YAML as helm reads values (sigs.k8s.io/yaml: go-yaml v2 into JSON): timestamps stay
    strings."""


_ValuesLoader.yaml_implicit_resolvers = {
    k: [(tag, r) for tag, r in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _as_helm_values(v):
    """JSON's view of YAML data: every number a float64, every map key a string."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        return {("true" if k is True else "false" if k is False else
                 "null" if k is None else strval(_as_helm_values(k))): _as_helm_values(x)
                for k, x in v.items()}
    if isinstance(v, list):
        return [_as_helm_values(x) for x in v]
    return str(v)


def read_values(text, what):
    try:
        v = yaml.load(text, Loader=_ValuesLoader)
    except yaml.YAMLError as e:
        raise TemplateError("failed to parse %s: %s" % (what, e))
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise TemplateError("failed to parse %s: not a map" % what)
    return _as_helm_values(v)


def merge_maps(a, b):
    """helm pkg/cli/values mergeMaps: b over a, maps merged recursively."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_maps(out[k], v)
        else:
            out[k] = v
    return out


def coalesce(user, defaults):
    """chartutil coalesceValues: user values over the chart's values.yaml; a user null deletes
    the key (and the default); maps merge recursively."""
    out = dict(user)
    for k, dv in defaults.items():
        if k in out:
            uv = out[k]
            if uv is None:
                del out[k]
            elif isinstance(uv, dict) and isinstance(dv, dict):
                out[k] = coalesce(uv, dv)
        elif dv is not None:
            out[k] = copy.deepcopy(dv)
    return out


def parse_set(expr, dest):
    """helm --set (pkg/strvals): a.b.c=value[,d=value...]; \\ escapes the next character;
    {a,b} is a list; true/false/null and integers not starting with 0 are typed (int64)."""
    i = 0
    n = len(expr)
    while i < n:
        key = []
        path = []
        while True:
            if i >= n:
                raise TemplateError("--set %s: key %r has no value" % (expr, "".join(key)))
            c = expr[i]
            if c == "\\" and i + 1 < n:
                key.append(expr[i + 1])
                i += 2
            elif c == ".":
                path.append("".join(key))
                key = []
                i += 1
            elif c == "[":
                raise TemplateError("--set %s: list indexes are not implemented by helm_render.py "
                                    "(use --values)" % expr)
            elif c == "=":
                path.append("".join(key))
                i += 1
                break
            elif c == ",":
                raise TemplateError("--set %s: key %r has no value" % (expr, "".join(key)))
            else:
                key.append(c)
                i += 1
        if i < n and expr[i] == "{":
            j = expr.find("}", i)
            if j < 0:
                raise TemplateError("--set %s: list must terminate with '}'" % expr)
            val = [_typed(x) for x in expr[i + 1:j].split(",")] if j > i + 1 else []
            i = j + 1
            if i < n and expr[i] == ",":
                i += 1
        else:
            raw = []
            while i < n and expr[i] != ",":
                if expr[i] == "\\" and i + 1 < n:
                    raw.append(expr[i + 1])
                    i += 2
                    continue
                raw.append(expr[i])
                i += 1
            i += 1
            val = _typed("".join(raw))
        d = dest
        for k in path[:-1]:
            if not isinstance(d.get(k), dict):
                d[k] = {}
            d = d[k]
        d[path[-1]] = val
    return dest


def _typed(val):
    low = val.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "null":
        return None
    if val == "0":
        return GoInt64(0)
    if val and val[0] != "0" and re.fullmatch(r"[+-]?[0-9]+", val):
        iv = int(val)
        if -2**63 <= iv < 2**63:
            return GoInt64(iv)
    return val


CHART_FIELDS = [("name", "Name"), ("home", "Home"), ("sources", "Sources"), ("version", "Version"),
                ("description", "Description"), ("keywords", "Keywords"),
                ("maintainers", "Maintainers"), ("icon", "Icon"), ("apiVersion", "APIVersion"),
                ("condition", "Condition"), ("tags", "Tags"), ("appVersion", "AppVersion"),
                ("deprecated", "Deprecated"), ("annotations", "Annotations"),
                ("kubeVersion", "KubeVersion"), ("dependencies", "Dependencies"), ("type", "Type")]


class Chart:
    def __init__(self, chart_dir):
        self.dir = chart_dir
        with open(os.path.join(chart_dir, "Chart.yaml")) as f:
            meta = yaml.load(f, Loader=_ValuesLoader) or {}
        if meta.get("dependencies") or os.path.isdir(os.path.join(chart_dir, "charts")):
            raise TemplateError("subcharts/dependencies are not implemented by helm_render.py")
        if os.path.exists(os.path.join(chart_dir, ".helmignore")):
            raise TemplateError(".helmignore is not implemented by helm_render.py")
        self.name = strval(meta.get("name", ""))
        fields = {}
        for key, field in CHART_FIELDS:
            v = meta.get(key)
            if field in ("Sources", "Keywords", "Maintainers", "Annotations", "Dependencies"):
                fields[field] = v  # nil when absent
            elif field == "Deprecated":
                fields[field] = bool(v)
            else:  # string fields (a YAML number such as appVersion: 1.0 is its text)
                fields[field] = "" if v is None else (v if isinstance(v, str) else strval(v))
        self.metadata = GoStruct("*chart.Metadata", fields)
        vpath = os.path.join(chart_dir, "values.yaml")
        self.values = {}
        if os.path.exists(vpath):
            with open(vpath) as f:
                self.values = read_values(f.read(), vpath)
        spath = os.path.join(chart_dir, "values.schema.json")
        self.schema = None
        if os.path.exists(spath):
            with open(spath) as f:
                self.schema = json.load(f)
        self.templates = {}
        self.files = {}
        for root, dirs, names in os.walk(chart_dir):
            dirs.sort()
            for fn in sorted(names):
                full = os.path.join(root, fn)
                rel = os.path.relpath(full, chart_dir).replace(os.sep, "/")
                with open(full, encoding="utf-8", errors="surrogateescape") as f:
                    text = f.read()
                if rel.startswith("templates/"):
                    self.templates["%s/%s" % (self.name, rel)] = text
                elif rel not in ("Chart.yaml", "values.yaml", "values.schema.json", "Chart.lock",
                                 "requirements.yaml", "requirements.lock"):
                    self.files[rel] = text


def kube_version(v):
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?([-+].*)?", v)
    if not m:
        raise TemplateError("invalid kube version %r" % v)
    return GoStruct("chartutil.KubeVersion", {
        "Version": v if v.startswith("v") else "v" + v,
        "Major": m.group(1), "Minor": m.group(2)},
        methods={"GitVersion": ([], None, lambda: v if v.startswith("v") else "v" + v)})


def validate_schema(chart, values):
    """helm validates the coalesced values against values.schema.json before rendering. Returns
    an error text, "" when valid, or None when python3's jsonschema is not importable."""
    try:
        import jsonschema
    except ImportError:
        return None
    # Validate what helm validates: the values as JSON (float64 whole numbers are integers).
    doc = json.loads(json.dumps(_json_round_trip(values)))
    cls = jsonschema.validators.validator_for(chart.schema)
    errors = sorted(cls(chart.schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return ""
    lines = ["values don't meet the specifications of the schema(s) in the following chart(s):",
             "%s:" % chart.name]
    for e in errors:
        where = "/" + "/".join(str(p) for p in e.absolute_path)
        lines.append("- at '%s': %s" % (where, e.message))
    return "\n".join(lines)


# helm pkg/release/v1/util/kind_sorter.go InstallOrder
INSTALL_ORDER = ["PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
                 "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret",
                 "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
                 "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
                 "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role",
                 "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
                 "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
                 "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


class Manifest:
    def __init__(self, source, content, head):
        self.source, self.content, self.head = source, content, head


def split_manifests(text):
    """releaseutil.SplitManifests: split at lines starting with --- (regexp (?m)^---[ \\t]*),
    drop blank documents, trim leading whitespace."""
    docs = re.split(r"(?m)^---[ \t]*", text.lstrip())
    return [d.lstrip() for d in docs if d.strip()]


def render_chart(chart_dir, set_values=(), values_files=(), namespace="default",
                 kube_ver="v1.32.0", release_name="release-name", skip_schema=False,
                 warn=lambda msg: print(msg, file=sys.stderr)):
    """Renders like `helm template`: returns (manifests sorted in install order, NOTES text).
    Raises TemplateError with helm's message on failure."""
    chart = Chart(chart_dir)
    user = {}
    for vf in values_files:
        with open(vf) as f:
            user = merge_maps(user, read_values(f.read(), vf))
    for s in set_values:
        parse_set(s, user)
    values = coalesce(user, chart.values)
    if chart.schema is not None and not skip_schema:
        err = validate_schema(chart, values)
        if err is None:
            warn("helm_render.py: note: python3 jsonschema is not importable: values.schema.json "
                 "was NOT checked (helm would check it)")
        elif err:
            raise TemplateError(err)
    top = {
        "Values": values,
        "Release": {"Name": release_name, "Namespace": namespace, "IsUpgrade": False,
                    "IsInstall": True, "Revision": 1, "Service": "Helm"},
        "Chart": chart.metadata,
        "Capabilities": GoStruct("*chartutil.Capabilities", {
            "KubeVersion": kube_version(kube_ver),
            "APIVersions": [],
            "HelmVersion": GoStruct("version.BuildInfo", {"Version": "helm_render.py"})}),
        "Files": Files(chart.files),
    }
    try:
        engine = Engine(chart.templates)
    except ParseError as e:  # helm's cleanupParseError: "parse error at (FILE:LINE): MSG"
        m = re.match(r"template: (\S+?): (.*)$", str(e), re.S)
        raise TemplateError("parse error at (%s): %s" % m.groups() if m else str(e))
    rendered = {}
    for name in helm_template_order(chart.templates):
        if os.path.basename(name).startswith("_"):
            continue
        data = dict(top)
        data["Template"] = {"Name": name, "BasePath": "%s/templates" % chart.name}
        st = State(engine, engine.sources[name])
        st.vars = [["$", data]]
        try:
            run_deep(st.walk, data, engine.trees[name])
        except FailError as e:
            raise TemplateError("execution error at (%s): %s" % (engine.sources[name].loc(st.pos), e.msg))
        except ExecError as e:
            raise TemplateError(e.msg)
        rendered[name] = "".join(st.out).replace("<no value>", "")
    notes = None
    manifests = []
    for name in sorted(rendered):
        if name == "%s/templates/NOTES.txt" % chart.name:
            notes = rendered[name]
            continue
        if not rendered[name].strip():
            continue
        for doc in split_manifests(rendered[name]):
            try:
                head = yaml.safe_load(doc)
            except yaml.YAMLError as e:
                raise TemplateError("YAML parse error on %s: %s" % (name, e))
            if head is not None and not isinstance(head, dict):
                raise TemplateError("YAML parse error on %s: error unmarshaling JSON: "
                                    "cannot unmarshal %s into a manifest head" % (name, type(head).__name__))
            manifests.append(Manifest(name, doc, head or {}))
    order = {k: i for i, k in enumerate(INSTALL_ORDER)}

    def kind_key(m):
        kind = m.head.get("kind") or ""
        return (0, order[kind], "") if kind in order else (1, 0, kind)
    manifests.sort(key=kind_key)  # stable: equal kinds keep file/document order
    return manifests, notes


def format_manifests(manifests):
    return "".join("---\n# Source: %s\n%s\n" % (m.source, m.content) for m in manifests)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chart")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("-f", "--values", action="append", default=[], metavar="FILE")
    ap.add_argument("-n", "--namespace", default="default")
    ap.add_argument("--kube-version", default="v1.32.0",
                    help="Capabilities.KubeVersion (helm's default: the client-go version it was built with)")
    ap.add_argument("--release-name", default="release-name")
    ap.add_argument("--skip-schema-validation", action="store_true")
    ap.add_argument("--notes", action="store_true", help="also print the rendered NOTES.txt")
    a = ap.parse_args(argv)
    try:
        manifests, notes = render_chart(a.chart, a.set, a.values, a.namespace, a.kube_version,
                                        a.release_name, a.skip_schema_validation)
    except (TemplateError, OSError) as e:
        print("Error: %s" % e, file=sys.stderr)
        return 1
    sys.stdout.write(format_manifests(manifests))
    if a.notes and notes is not None:
        sys.stdout.write("\nNOTES:\n%s\n" % notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
