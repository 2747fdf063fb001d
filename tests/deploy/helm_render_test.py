#!/usr/bin/env python3
"""Tests of the Helm chart through tests/deploy/helm_render.py (a renderer of the Go-template
subset the chart uses; helm itself is not installable here).

  helm_render_test.py unit
      The renderer itself on small templates (trimming, if/else, with, range, variables,
      default, include+nindent, toYaml, and/or, eq, printf, typed parameters, missing values,
      --set parsing, manifest splitting and ordering), so that a renderer bug cannot hide a
      chart bug.
  helm_render_test.py chart TOPOGANGD_BIN [CHART_DIR]
      Renders the chart with its defaults and with every variant its values support, and checks
      each output (see check_render below), runs the real topogangd on each rendered config.yaml,
      and checks that every `fail` in the templates fires, with its message, on the combination
      it refuses.
  helm_render_test.py reject CASE TOPOGANGD_BIN
      Breaks one thing in a scratch copy of the chart and passes only if `chart` fails on it with
      the expected complaint (so the chart checks are known to be able to fail).
"""

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

try:
    import yaml
except ImportError:
    print("helm_render_test: python3 PyYAML is missing (Debian: python3-yaml; scripts/deps.sh "
          "installs it)", file=sys.stderr)
    sys.exit(1)

import helm_render as hr  # noqa: E402

NS = "topogang-system"


# === unit tests of the renderer =================================================================
def run_tpl(text, data=None, defines=""):
    """Executes one template (plus optional helper text) on data, as helm does for one file."""
    eng = hr.Engine({"c/templates/_h.tpl": defines, "c/templates/t.yaml": text})
    return eng.execute("c/templates/t.yaml", data if data is not None else {})


class RendererTest(unittest.TestCase):
    def check(self, text, want, data=None, defines=""):
        self.assertEqual(run_tpl(text, data, defines), want)

    def assertExecError(self, text, want, data=None, defines=""):
        with self.assertRaises(hr.ExecError) as cm:
            run_tpl(text, data, defines)
        self.assertIn(want, str(cm.exception))

    def assertParseError(self, text, want):
        with self.assertRaises(hr.ParseError) as cm:
            run_tpl(text)
        self.assertIn(want, str(cm.exception))

    # -- lexing and trimming
    def test_trim_markers(self):
        self.check("a  \n {{- 1 -}} \n  b", "a1b")
        self.check("a {{ 1 }} b", "a 1 b")
        self.check("a\n{{- 2 }}\nb", "a2\nb")
        self.check("a\n{{ 2 -}}\n  b", "a\n2b")
        self.check("{{-3}}", "-3")  # no space after the dash: the number -3, no trimming
        self.check("x {{3 -}} y", "x 3y")

    def test_comments(self):
        self.check("a\n{{- /* gone\nacross lines */ -}}\nb", "ab")
        self.check("a{{/* c */}}b", "ab")
        self.assertParseError("{{ /* c */ }}", "unrecognized character")  # not right after {{
        self.assertParseError("{{/* c */ x}}", "comment ends before closing delimiter")

    def test_strings_with_delimiters(self):
        self.check('{{ "{{" }} $value {{ "}}" }}', "{{ $value }}")
        self.check('{{ `raw\\n` }}|{{ "esc\\n" }}', "raw\\n|esc\n")

    # -- values and printing
    def test_missing_value_prints_no_value_then_helm_removes_it(self):
        self.check("[{{ .Values.nothing }}]", "[<no value>]", {"Values": {}})
        out, _ = render_mini({"templates/x.yaml": "a: '{{ .Values.nothing }}'\n"}, {})
        self.assertEqual(out[0].content, "a: ''\n")

    def test_nil_field_chain(self):
        self.assertExecError("{{ .Values.a.b }}", "nil pointer evaluating interface {}.b", {"Values": {}})
        self.assertExecError("{{ .Values.a.b }}", "nil pointer evaluating interface {}.b", {"Values": {"a": None}})
        # a nil held by a variable or a parenthesised pipeline is an invalid value: its fields are too
        self.check("{{ $x := .Values.a }}[{{ $x.b }}]", "[<no value>]", {"Values": {}})
        self.check("[{{ (.Values.a).b }}]", "[<no value>]", {"Values": {}})
        self.assertExecError("{{ .Chart.Nope }}", "can't evaluate field Nope in type *chart.Metadata",
                             {"Chart": hr.GoStruct("*chart.Metadata", {"Name": "c"})})

    def test_float_printing_like_go(self):
        for f, want in [(8888.0, "8888"), (0.5, "0.5"), (1e6, "1e+06"), (268435456.0, "2.68435456e+08"),
                        (123456.0, "123456"), (1e-5, "1e-05"), (0.0001, "0.0001"), (-2.5, "-2.5")]:
            self.assertEqual(hr.go_float(f), want, f)
        self.check("{{ .v }}", "8888", {"v": 8888.0})
        self.check("{{ .m }}", "map[a:1 b:[x <nil>]]", {"m": {"b": ["x", None], "a": 1.0}})

    # -- control structures
    def test_if_else_truthiness(self):
        t = "{{ if .v }}T{{ else if .w }}W{{ else }}F{{ end }}"
        for v, want in [(None, "F"), (False, "F"), (0, "F"), (0.0, "F"), ("", "F"), ({}, "F"), ([], "F"),
                        (True, "T"), (1, "T"), ("x", "T"), ({"a": 1}, "T"), ([0], "T")]:
            self.check(t, want, {"v": v, "w": None})
        self.check(t, "W", {"v": 0, "w": "y"})
        self.assertParseError("{{ if 1 }}x{{ else }}y{{ else }}z{{ end }}", "expected end")
        self.assertParseError("{{ if 1 }}x", "unexpected EOF")

    def test_with(self):
        self.check("{{ with .a }}{{ .b }}/{{ $.top }}{{ else }}none{{ end }}", "B/T", {"a": {"b": "B"}, "top": "T"})
        self.check("{{ with .a }}{{ .b }}{{ else }}none{{ end }}", "none", {"a": {}})
        self.check("{{ with .a }}x{{ else with .b }}{{ . }}{{ end }}", "2", {"a": "", "b": 2})

    def test_range(self):
        self.check("{{ range $i, $v := .l }}{{ $i }}={{ $v }};{{ end }}", "0=a;1=b;", {"l": ["a", "b"]})
        self.check("{{ range $k, $v := .m }}{{ $k }}={{ . }};{{ end }}", "a=1;b=2;", {"m": {"b": 2, "a": 1}})
        self.check("{{ range .l }}x{{ else }}empty{{ end }}", "empty", {"l": []})

    def test_variables_and_scope(self):
        self.check("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}", "2")
        self.assertParseError("{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}", "undefined variable")
        self.assertParseError("{{ $nope }}", "undefined variable")
        self.check('{{ define "d" }}{{ $.k }}{{ end }}{{ include "d" (dict "k" "v") }}', "v")

    def test_define_include_template_nindent(self):
        helpers = '{{- define "lines" -}}\na: 1\nb: 2\n{{- end -}}'
        self.check('x:{{- include "lines" . | nindent 2 }}', "x:\n  a: 1\n  b: 2", defines=helpers)
        self.check('[{{ template "lines" . }}]', "[a: 1\nb: 2]", defines=helpers)
        self.assertExecError('{{ include "missing" . }}', 'template "missing" not defined')

    # -- functions
    def test_default(self):
        d = {"Values": {"s": "", "z": 0, "f": False, "x": "X", "m": {}, "n": 5.0}}
        self.check('{{ .Values.nope | default "d" }}|{{ .Values.s | default "d" }}|{{ .Values.z | default 7 }}'
                   '|{{ .Values.f | default true }}|{{ .Values.x | default "d" }}|{{ .Values.m | default "d" }}'
                   '|{{ .Values.n | default 1 }}', "d|d|7|true|X|d|5", d)
        self.check("{{ (.Values.nope | default dict).name }}", "<no value>", d)

    def test_and_or_return_an_argument_and_short_circuit(self):
        self.check('{{ or "" "b" }}|{{ or "a" "b" }}|{{ and 1 0 }}|{{ and 1 "x" }}', "b|a|0|x")
        data = {"Values": {}}
        self.check("{{ and false .Values.a.b }}|{{ or true .Values.a.b }}", "false|true", data)
        self.assertExecError("{{ and true .Values.a.b }}", "nil pointer", data)
        self.check("{{ not 0 }}{{ not .x }}{{ not (list 1) }}", "truetruefalse", {"x": None})

    def test_eq_is_typed_like_go(self):
        self.check('{{ eq "a" "b" "a" }}|{{ eq 1 2 }}|{{ eq .m "x" }}', "true|false|false", {"m": None})
        self.assertExecError("{{ eq .f 1 }}", "incompatible types for comparison: float64 and int", {"f": 1.0})
        self.check("{{ eq (int .f) 1 }}|{{ eq (int .i64) 3 }}", "true|true", {"f": 1.0, "i64": hr.GoInt64(3)})

    def test_printf_and_quote(self):
        self.check('{{ printf "%s/%q/%d/%v/%%" "a" "b\\"" 3 .f }}', 'a/"b\\""/3/1.5/%', {"f": 1.5})
        self.check('{{ printf "%s" 3 }}|{{ printf "%s %s" "a" }}', "%!s(int=3)|a %!s(MISSING)")
        self.assertExecError('{{ printf "%x" 3 }}', "not implemented by helm_render.py")
        self.check('{{ quote "a\\"b" }}|{{ .x | quote }}|{{ quote .nil }}|{{ quote 1 }}', '"a\\"b"|"8889"||"1"',
                   {"x": 8889.0, "nil": None})

    def test_typed_parameters(self):
        self.assertExecError("{{ nindent .n \"x\" }}", "wrong type for value; expected int; got float64", {"n": 2.0})
        self.assertExecError('{{ splitList ":" .Values.a }}', "expected string; got interface {}", {"Values": {}})
        self.assertExecError('{{ $v := .Values.a }}{{ splitList ":" $v }}', "invalid value; expected string", {"Values": {}})
        self.assertExecError('{{ nindent "2" "x" }}', "expected integer")
        self.assertExecError("{{ set .Values.a \"k\" 1 }}", "expected map[string]interface {}", {"Values": {}})
        self.assertExecError('{{ $m := .Values.a }}{{ set $m "k" 1 }}', "assignment to entry in nil map", {"Values": {}})

    def test_unknown_function_is_a_parse_error_even_when_not_taken(self):
        self.assertParseError("{{ if false }}{{ frobnicate 1 }}{{ end }}", 'function "frobnicate" not defined')
        self.assertParseError("{{ if false }}{{ trunc 3 \"abcd\" }}{{ end }}", 'function "trunc" not defined')
        self.assertParseError("{{ block \"x\" . }}{{ end }}", "not implemented by helm_render.py")

    def test_to_yaml(self):
        self.assertEqual(hr.to_yaml({"b": {"y": 1.0, "x": [1.5, "s"]}, "a": None, "e": {}, "l": []}),
                         "a: null\nb:\n  x:\n  - 1.5\n  - s\n  y: 1\ne: {}\nl: []")
        self.assertEqual(hr.to_yaml({"a10": 1, "a9": 2, "B": 3, "a": 4}), "B: 3\na: 4\na9: 2\na10: 1")
        self.assertEqual(hr.to_yaml("foo"), "foo")
        self.assertEqual(hr.to_yaml(None), "null")
        self.assertEqual(hr.to_yaml({"p": "8888", "t": "true", "n": 268435456.0}),
                         "n: 268435456\np: '8888'\nt: 'true'")
        self.check("r:\n  {{- toYaml .r | nindent 2 }}", "r:\n  cpu: '2'\n  memory: 1Gi", {"r": {"memory": "1Gi", "cpu": "2"}})

    def test_dict_set_deepcopy_has_list_last_split_int(self):
        self.check('{{ $d := deepCopy .m }}{{ $_ := set $d "k" "v" }}{{ $d.k }}/{{ .m.k }}', "v/<no value>", {"m": {}})
        self.check('{{ (dict "a" 1 "b").b | quote }}|{{ has "x" (list "y" "x") }}|{{ has 1 (list 1.0) }}',
                   '""|true|false')
        self.check('{{ splitList ":" "0.0.0.0:9090" | last }}|{{ list | last }}', "9090|<no value>")
        self.check('{{ int "8888" }}|{{ int .f }}|{{ int "x" }}|{{ int "12.7" }}|{{ int true }}|{{ int "0x10" }}',
                   "8888|2|0|12|1|16", {"f": 2.9})
        self.check('{{ regexFind "^v[0-9]+\\\\.[0-9]+" "v1.31.4-gke.1" }}|{{ sha256sum "a" }}',
                   "v1.31|" + hashlib.sha256(b"a").hexdigest())
        self.assertExecError('{{ has "x" "xyz" }}', "Cannot find has on type string")

    def test_fail_reports_the_call_in_the_rendered_file(self):
        files = {"templates/_h.tpl": '{{ define "chk" }}{{ if .Values.bad }}{{ fail "bad value" }}{{ end }}{{ end }}',
                 "templates/x.yaml": "a: 1\n{{- include \"chk\" . }}\n"}
        with self.assertRaises(hr.TemplateError) as cm:
            render_mini(files, {"bad": True})
        self.assertEqual(str(cm.exception), "execution error at (c/templates/x.yaml:2:4): bad value")
        render_mini(files, {"bad": False})

    # -- helm: values, --set, manifests
    def test_set_parsing_and_coalesce(self):
        d = {}
        hr.parse_set("a.b=1,c=true,d=null,e=0123,f=x\\,y,g.h\\.i=z,l={p,2}", d)
        self.assertEqual(d, {"a": {"b": 1}, "c": True, "d": None, "e": "0123", "f": "x,y", "g": {"h.i": "z"}, "l": ["p", 2]})
        self.assertIsInstance(d["a"]["b"], hr.GoInt64)
        self.assertEqual(hr.coalesce({"a": {"x": None, "y": 2}, "n": None}, {"a": {"x": 1.0, "z": 3.0}, "n": 1.0, "k": 4.0}),
                         {"a": {"y": 2, "z": 3.0}, "k": 4.0})
        self.assertEqual(hr.read_values("a: 1\nd: 2024-01-01\n", "x"), {"a": 1.0, "d": "2024-01-01"})

    def test_manifest_split_and_install_order(self):
        files = {"templates/a.yaml": "kind: Deployment\nmetadata: {name: d}\n---\n\n---\nkind: Zeta\nmetadata: {name: z}\n",
                 "templates/b.yaml": "# only\nkind: ServiceAccount\nmetadata: {name: s}\n---\nkind: Alpha\nmetadata: {name: a}\n"}
        out, _ = render_mini(files, {})
        self.assertEqual([m.head["kind"] for m in out], ["ServiceAccount", "Deployment", "Alpha", "Zeta"])
        self.assertTrue(hr.format_manifests(out).startswith("---\n# Source: c/templates/b.yaml\n# only\nkind: ServiceAccount"))
        with self.assertRaises(hr.TemplateError) as cm:
            render_mini({"templates/x.yaml": "a: [\n"}, {})
        self.assertIn("YAML parse error on c/templates/x.yaml", str(cm.exception))

    def test_template_execution_order_is_helms(self):
        self.assertEqual(hr.helm_template_order(["c/templates/a.yaml", "c/templates/z.yaml", "c/templates/sub/b.yaml"]),
                         ["c/templates/sub/b.yaml", "c/templates/z.yaml", "c/templates/a.yaml"])


def render_mini(files, values, **kw):
    """Renders a throwaway chart named c with these template files and values.yaml."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: c\nversion: 0.1.0\nappVersion: \"1.0\"\n")
        with open(os.path.join(d, "values.yaml"), "w") as f:
            yaml.safe_dump(values, f)
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        return hr.render_chart(d, warn=lambda m: None, **kw)


# === the chart =================================================================================
# Variants: (name, values (as a --values file), --set list, render keyword arguments).
TOKENS = {"agent": {"enabled": True, "tokenSecret": "topogang-agent-tokens"},
          "daemon": {"agentTokensSecret": "topogangd-agent-tokens"}}
INSECURE = {"agent": {"enabled": True, "allowUnauthenticated": True}}
MONITORING = {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
              "prometheusRule": {"enabled": True, "labels": {"role": "alerts"}},
              "grafanaDashboard": {"enabled": True, "labels": {"team": "gpu"}, "annotations": {"grafana_folder": "GPU"}}}
NETPOL = {"networkPolicy": {"enabled": True,
                            "extenderFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                            "grpcFrom": [{"podSelector": {"matchLabels": {"app": "ops-shell"}}}],
                            "prometheus": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                                           "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}}}


def merged(*ds):
    out = {}
    for d in ds:
        out = hr.merge_maps(out, copy.deepcopy(d))
    return out


VARIANTS = [
    ("defaults", {}, [], {}),
    ("agent with per-node tokens", TOKENS, [], {}),
    ("agent.allowUnauthenticated", INSECURE, [], {}),
    ("agent with projected ServiceAccount tokens", {"agent": {"enabled": True}}, [], {}),
    ("daemon.drainRbac=false", {"daemon": {"drainRbac": False}}, [], {}),
    ("daemon.agentTokensSecret without agents", {"daemon": {"agentTokensSecret": "topogangd-agent-tokens"}}, [], {}),
    ("tls.enabled (cert-manager, bootstrapped CA)", {"tls": {"enabled": True}}, [], {}),
    ("tls.enabled (cert-manager, user ClusterIssuer)",
     {"tls": {"enabled": True, "certManager": {"issuer": {"name": "my-topogang-ca", "kind": "ClusterIssuer"}}}}, [], {}),
    ("tls.enabled (mode secret)",
     {"tls": {"enabled": True, "mode": "secret", "secret": {"server": "my-topogangd-tls", "client": "my-scheduler-tls"}}}, [], {}),
    ("tls.enabled without clientAuth", {"tls": {"enabled": True, "clientAuth": False}}, [], {}),
    ("scheduler.enabled=false", {"scheduler": {"enabled": False}}, [], {}),
    ("scheduler.enabled=false, tls mode secret without a client Secret",
     {"scheduler": {"enabled": False}, "tls": {"enabled": True, "mode": "secret", "secret": {"server": "my-topogangd-tls"}}}, [], {}),
    ("leaderElection.enabled=false", {"leaderElection": {"enabled": False}}, [], {}),
    ("no gRPC (config.daemon.grpc=null)", {}, ["config.daemon.grpc=null"], {}),
    ("networkPolicy with agents", merged(NETPOL, INSECURE), [], {}),
    ("networkPolicy, scheduler off (own scheduler's peers), only a Prometheus podSelector",
     {"scheduler": {"enabled": False}, "networkPolicy": {
         "enabled": True, "extenderFrom": [{"ipBlock": {"cidr": "10.1.0.0/16"}}],
         "prometheus": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}}},
     [], {}),
    ("monitoring", MONITORING, [], {}),
    ("monitoring under tls", merged(MONITORING, {"tls": {"enabled": True}}), [], {}),
    ("everything on",
     merged(TOKENS, NETPOL, MONITORING, {
         "tls": {"enabled": True}, "imagePullSecrets": [{"name": "my-registry"}],
         "daemon": {"priorityClassName": "", "gangBarrier": "topogang"},
         "agent": {"runtimeClassName": ""},
         "scheduler": {"image": "registry.example/kube-scheduler:v1.30.2", "name": "gpu-scheduler"},
         "config": {"daemon": {"scheduler_names": ["gpu-scheduler"]}}}),
     ["daemon.replicas=3", "image.tag=dev"], {}),
    ("--set typed values (int64 ports)", {},
     ["tls.enabled=true", "tls.healthPort=9999", "config.daemon.http_port=8080", "daemon.replicas=3",
      "agent.enabled=true", "agent.allowUnauthenticated=true"], {}),
    ("kube-version with a vendor suffix", {}, [], {"kube_ver": "v1.31.4-gke.1256000"}),
]

# Combinations the chart refuses: (name, values, --set, message of its `fail`). The schema refuses
# some first (helm validates values.schema.json before rendering): those also run with schema
# validation skipped, so that the template's own guard is what is tested.
FAIL_CASES = [
    ("tls.mode neither certManager nor secret", {"tls": {"enabled": True, "mode": "vault"}}, [],
     'tls.mode must be certManager or secret, got "vault"'),
    ("tls.mode=secret without tls.secret.server", {"tls": {"enabled": True, "mode": "secret"}}, [],
     "tls.mode=secret needs tls.secret.server"),
    ("tls.mode=secret, scheduler.enabled, no tls.secret.client",
     {"tls": {"enabled": True, "mode": "secret", "secret": {"server": "s"}}}, [],
     "tls.mode=secret with scheduler.enabled needs tls.secret.client"),
    ("tls.healthPort equal to http_port", {"tls": {"enabled": True, "healthPort": 8888}}, [],
     "tls.healthPort must differ from config.daemon.http_port"),
    ("tls.healthPort equal to http_port (--set, int64)", {}, ["tls.enabled=true", "tls.healthPort=8080", "config.daemon.http_port=8080"],
     "tls.healthPort must differ from config.daemon.http_port"),
    ("daemon.gangBarrier unknown", {"daemon": {"gangBarrier": "kube"}}, [],
     'daemon.gangBarrier must be auto or topogang, got "kube"'),
    ("daemon.agentTokensSecret without gRPC", {"daemon": {"agentTokensSecret": "t"}}, ["config.daemon.grpc=null"],
     "daemon.agentTokensSecret needs config.daemon.grpc"),
    ("agent.enabled without gRPC (tokens)", TOKENS, ["config.daemon.grpc=null"],
     "needs config.daemon.grpc"),
    ("agent.enabled without gRPC (allowUnauthenticated)", INSECURE, ["config.daemon.grpc=null"],
     "agent.enabled needs config.daemon.grpc"),
    ("agent.enabled without an identity",
     {"agent": {"enabled": True, "serviceAccountToken": {"enabled": False}}}, [],
     "agent.enabled needs agent.tokenSecret and daemon.agentTokensSecret"),
    ("agent.enabled with agent.tokenSecret only", {"agent": {"enabled": True, "tokenSecret": "t"}}, [],
     "agent.enabled needs agent.tokenSecret and daemon.agentTokensSecret"),
    ("networkPolicy without a scheduler to let in",
     {"networkPolicy": {"enabled": True}, "scheduler": {"enabled": False}}, [],
     "networkPolicy.enabled with scheduler.enabled=false needs networkPolicy.extenderFrom"),
]

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace", "PriorityClass", "ClusterIssuer",
                  "CustomResourceDefinition", "StorageClass", "PersistentVolume", "APIService",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
POD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}
# Roles the cluster itself provides (bindings may name them without the chart rendering them).
BUILTIN_ROLES = {("ClusterRole", None, "system:kube-scheduler"), ("ClusterRole", None, "system:volume-scheduler"),
                 ("Role", "kube-system", "extension-apiserver-authentication-reader")}


def dig(d, *path, default=None):
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        elif isinstance(d, list) and isinstance(p, int) and p < len(d):
            d = d[p]
        else:
            return default
    return d


def matches(selector, labels):
    return isinstance(selector, dict) and bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def user_secrets(values):
    """The Secrets values.yaml documents as the user's to create: name -> the value naming it."""
    out = {}
    for path in (("daemon", "agentTokensSecret"), ("agent", "tokenSecret")):
        v = dig(values, *path)
        if v:
            out[v] = ".".join(path)
    if dig(values, "tls", "enabled") and dig(values, "tls", "mode") == "secret":
        for k in ("server", "client"):
            v = dig(values, "tls", "secret", k)
            if v:
                out[v] = "tls.secret." + k
    return out


def duration_ms(s):
    m = re.fullmatch(r"(\d+)(ms|s|m)", str(s))
    return int(m.group(1)) * {"ms": 1, "s": 1000, "m": 60000}[m.group(2)] if m else None


class Report:
    def __init__(self):
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        print("FAIL: " + msg)

    def ok(self, msg):
        print("ok: " + msg)


def run_topogangd(topogangd, args, config_text, rep, label):
    """Runs topogangd with the container's args, its --config pointed at the rendered
    config.yaml, as check-deploy.sh's run_daemon does: it must get past flags and config and stop
    at "not running in a cluster" (exit 2)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(config_text)
        path = f.name
    try:
        if "--config" not in args or args.index("--config") + 1 >= len(args):
            rep.fail("%s: topogangd args have no --config FILE: %s" % (label, args))
            return
        argv = list(args)
        argv[argv.index("--config") + 1] = path
        env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
        try:
            p = subprocess.run([topogangd] + argv, env=env, capture_output=True, text=True, timeout=60)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "(timed out after 60 s)", -1
        if rc == 2 and "not running in a cluster" in out:
            rep.ok("%s: topogangd accepts the rendered config.yaml and args (stopped at: no API server here)" % label)
        else:
            rep.fail("%s: topogangd %s exited %s instead of reaching the in-cluster step: %s\n    config.yaml:\n%s"
                     % (label, " ".join(argv), rc, out.strip(), "\n".join("      " + l for l in config_text.splitlines())))
    finally:
        os.unlink(path)


def check_render(manifests, values, label, rep, topogangd, chart_dir):
    """Everything checked on one rendered variant (failures go to rep)."""
    docs = []
    for m in manifests:
        try:
            d = yaml.safe_load(m.content)
        except yaml.YAMLError as e:
            rep.fail("%s: %s: a document is not YAML: %s" % (label, m.source, e))
            continue
        if not isinstance(d, dict):
            rep.fail("%s: %s: a document is not a YAML map (%s)" % (label, m.source, type(d).__name__))
            continue
        d["__source"] = m.source
        docs.append(d)
    n0 = len(rep.failures)

    # -- identity: apiVersion, kind, name, namespace; unique names per kind
    seen = {}
    for d in docs:
        where = "%s: %s %s" % (label, d["__source"], d.get("kind"))
        for key in ("apiVersion", "kind"):
            if not isinstance(d.get(key), str) or not d.get(key):
                rep.fail("%s: no %s" % (where, key))
        name, ns = dig(d, "metadata", "name"), dig(d, "metadata", "namespace")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name or "") or len(name) > 253:
            rep.fail("%s: metadata.name %r is not a DNS subdomain name" % (where, name))
        if d.get("kind") in CLUSTER_SCOPED:
            if ns is not None:
                rep.fail("%s %s: cluster-scoped, but has metadata.namespace %r" % (where, name, ns))
        elif not isinstance(ns, str) or not ns:
            rep.fail("%s %s: namespaced kind without metadata.namespace" % (where, name))
        key = (d.get("kind"), ns, name)
        if key in seen:
            rep.fail("%s: %s %s/%s rendered twice (also in %s)" % (label, key[0], ns, name, seen[key]))
        seen[key] = d["__source"]
        for part in ("labels", "annotations"):
            for k, v in (dig(d, "metadata", part) or {}).items():
                if not isinstance(v, str):
                    rep.fail("%s %s: metadata.%s.%s is a %s, not a string" % (where, name, part, k, type(v).__name__))

    def objs(kind, ns=None):
        return [d for d in docs if d.get("kind") == kind and (ns is None or dig(d, "metadata", "namespace") == ns)]

    def names(kind, ns=None):
        return {dig(d, "metadata", "name") for d in objs(kind, ns)}

    for d in objs("ConfigMap"):
        for k, v in (d.get("data") or {}).items():
            if not isinstance(v, str):
                rep.fail("%s: ConfigMap %s: data.%s is a %s, not a string" % (label, dig(d, "metadata", "name"), k, type(v).__name__))

    # -- pods: volumes, mounts, ports, probes, service accounts, images
    secrets = user_secrets(values)
    made_secrets = names("Secret", NS) | {dig(c, "spec", "secretName") for c in objs("Certificate", NS)}
    pods = []  # (owner doc, pod template)
    for d in docs:
        if d.get("kind") not in POD_KINDS:
            continue
        tpl = dig(d, "spec", "template") or {}
        pods.append((d, tpl))
        who = "%s: %s %s" % (label, d["kind"], dig(d, "metadata", "name"))
        labels = dig(tpl, "metadata", "labels") or {}
        for part in ("labels", "annotations"):
            for k, v in (dig(tpl, "metadata", part) or {}).items():
                if not isinstance(v, str):
                    rep.fail("%s: pod template %s.%s is a %s, not a string" % (who, part, k, type(v).__name__))
        for k, v in (dig(tpl, "spec", "nodeSelector") or {}).items():
            if not isinstance(v, str):
                rep.fail("%s: nodeSelector %s is a %s, not a string" % (who, k, type(v).__name__))
        sel = dig(d, "spec", "selector", "matchLabels")
        if not matches(sel, labels):
            rep.fail("%s: spec.selector.matchLabels %s does not select its pod template's labels %s" % (who, sel, labels))
        spec = tpl.get("spec") or {}
        vols = {}
        for v in spec.get("volumes") or []:
            if v.get("name") in vols:
                rep.fail("%s: volume %s defined twice" % (who, v.get("name")))
            vols[v.get("name")] = v
            if "configMap" in v and dig(v, "configMap", "name") not in names("ConfigMap", NS):
                rep.fail("%s: volume %s: ConfigMap %s is not rendered by the chart" % (who, v["name"], dig(v, "configMap", "name")))
            if "secret" in v:
                sn = dig(v, "secret", "secretName")
                if sn not in made_secrets and sn not in secrets:
                    rep.fail("%s: volume %s: Secret %s is neither rendered by the chart (nor a cert-manager "
                             "Certificate's) nor a user Secret values.yaml documents (%s)"
                             % (who, v["name"], sn, ", ".join(sorted(secrets)) or "none set"))
        sa = spec.get("serviceAccountName")
        if sa and sa not in names("ServiceAccount", NS):
            rep.fail("%s: serviceAccountName %s is not rendered by the chart" % (who, sa))
        ann_port = dig(tpl, "metadata", "annotations", "prometheus.io/port")
        all_ports = {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            cw = "%s container %s" % (who, c.get("name"))
            img = c.get("image")
            if not isinstance(img, str) or not re.fullmatch(r"[^\s:]+(:\d+)?/?[^\s:]*:[A-Za-z0-9_][A-Za-z0-9_.-]*", img):
                rep.fail("%s: image %r is not REPOSITORY:TAG" % (cw, img))
            ports = {}
            for p in c.get("ports") or []:
                if not isinstance(p.get("containerPort"), int):
                    rep.fail("%s: containerPort %r is not a number" % (cw, p.get("containerPort")))
                if p.get("name"):
                    if p["name"] in ports or len(p["name"]) > 15:
                        rep.fail("%s: port name %s repeated or longer than 15 characters" % (cw, p["name"]))
                    ports[p["name"]] = p.get("containerPort")
            all_ports.update(ports)
            for e in c.get("env") or []:
                if "value" in e and not isinstance(e["value"], str):
                    rep.fail("%s: env %s is a %s, not a string" % (cw, e.get("name"), type(e["value"]).__name__))
            mounts = set()
            for vm in c.get("volumeMounts") or []:
                if vm.get("name") not in vols:
                    rep.fail("%s: volumeMount %s (at %s) names no volume of its pod (volumes: %s)"
                             % (cw, vm.get("name"), vm.get("mountPath"), ", ".join(sorted(vols))))
                if vm.get("mountPath") in mounts:
                    rep.fail("%s: two volumes mounted at %s" % (cw, vm.get("mountPath")))
                mounts.add(vm.get("mountPath"))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                for how in ("httpGet", "tcpSocket", "grpc"):
                    port = dig(c, probe, how, "port")
                    if isinstance(port, str) and port not in ports:
                        rep.fail("%s: %s port %s is not one of its container ports (%s)" % (cw, probe, port, ", ".join(ports)))
        if ann_port is not None and sprig_int(ann_port) not in all_ports.values():
            rep.fail("%s: annotation prometheus.io/port %s is no container port (%s)" % (who, ann_port, all_ports))

    def pods_selected(selector, ns=NS):
        return [(o, t) for o, t in pods if dig(o, "metadata", "namespace") == ns
                and matches(selector, dig(t, "metadata", "labels") or {})]

    def container_ports(tpl):
        out = {}
        for c in dig(tpl, "spec", "containers") or []:
            for p in c.get("ports") or []:
                out[p.get("name")] = p.get("containerPort")
        return out

    # -- Services route to ports the selected pods have
    for s in objs("Service"):
        who = "%s: Service %s" % (label, dig(s, "metadata", "name"))
        sel = dig(s, "spec", "selector")
        selected = pods_selected(sel, dig(s, "metadata", "namespace"))
        if not selected:
            rep.fail("%s: selector %s matches no pod the chart renders" % (who, sel))
        for p in dig(s, "spec", "ports") or []:
            tp = p.get("targetPort", p.get("port"))
            for o, t in selected:
                cp = container_ports(t)
                if (isinstance(tp, str) and tp not in cp) or (isinstance(tp, int) and tp not in cp.values()):
                    rep.fail("%s: port %s targets %s, which %s %s does not have (%s)"
                             % (who, p.get("name"), tp, o["kind"], dig(o, "metadata", "name"), cp))

    # -- RBAC: bindings name rendered (or built-in) roles and rendered service accounts
    for b in objs("ClusterRoleBinding") + objs("RoleBinding"):
        who = "%s: %s %s" % (label, b["kind"], dig(b, "metadata", "name"))
        ref = b.get("roleRef") or {}
        rns = None if ref.get("kind") == "ClusterRole" else dig(b, "metadata", "namespace")
        if (ref.get("kind"), rns, ref.get("name")) not in BUILTIN_ROLES and ref.get("name") not in names(ref.get("kind"), rns):
            rep.fail("%s: roleRef %s %s is neither rendered nor built in" % (who, ref.get("kind"), ref.get("name")))
        for sub in b.get("subjects") or []:
            if sub.get("kind") == "ServiceAccount" and sub.get("name") not in names("ServiceAccount", sub.get("namespace")):
                rep.fail("%s: subject ServiceAccount %s/%s is not rendered" % (who, sub.get("namespace"), sub.get("name")))

    # -- topogangd: its ConfigMap, config.yaml through the real binary, files under mounts
    daemon = [(o, t) for o, t in pods if o["kind"] == "Deployment" and dig(o, "metadata", "name") == "topogangd"]
    if len(daemon) != 1:
        rep.fail("%s: expected one topogangd Deployment, found %d" % (label, len(daemon)))
        return
    dobj, dtpl = daemon[0]
    dc = (dig(dtpl, "spec", "containers") or [{}])[0]
    args = [str(a) for a in dc.get("args") or []]
    cfg_path = args[args.index("--config") + 1] if "--config" in args and args.index("--config") + 1 < len(args) else None
    cfg_text = cfg = None
    mounts = {vm.get("mountPath"): vm.get("name") for vm in dc.get("volumeMounts") or []}
    vols = {v.get("name"): v for v in dig(dtpl, "spec", "volumes") or []}
    if not cfg_path:
        rep.fail("%s: topogangd has no --config" % label)
    else:
        vol = vols.get(mounts.get(os.path.dirname(cfg_path)))
        cm_name = dig(vol, "configMap", "name")
        cms = [c for c in objs("ConfigMap", NS) if dig(c, "metadata", "name") == cm_name]
        if not cms:
            rep.fail("%s: --config %s is not in a ConfigMap volume mounted at %s" % (label, cfg_path, os.path.dirname(cfg_path)))
        else:
            cfg_text = (cms[0].get("data") or {}).get(os.path.basename(cfg_path))
            if not isinstance(cfg_text, str):
                rep.fail("%s: ConfigMap %s has no key %s (--config %s)" % (label, cm_name, os.path.basename(cfg_path), cfg_path))
                cfg_text = None
    if cfg_text is not None:
        try:
            cfg = yaml.safe_load(cfg_text)
        except yaml.YAMLError as e:
            rep.fail("%s: config.yaml does not parse: %s" % (label, e))
        if not isinstance(cfg, dict) or not isinstance(cfg.get("daemon"), dict):
            rep.fail("%s: config.yaml has no daemon: section: %r" % (label, cfg))
            cfg = None
    if cfg is not None:
        run_topogangd(topogangd, args, cfg_text, rep, label)
        want = hashlib.sha256(cfg_text.rstrip("\n").encode()).hexdigest()
        if dig(dtpl, "metadata", "annotations", "checksum/config") != want:
            rep.fail("%s: checksum/config %s is not the sha256 of the ConfigMap's config.yaml (%s): a config change "
                     "would not roll the pods" % (label, dig(dtpl, "metadata", "annotations", "checksum/config"), want))
        for key, path in [("token_file", ("daemon", "grpc", "token_file")), ("cert_file", ("daemon", "tls", "cert_file")),
                          ("key_file", ("daemon", "tls", "key_file")), ("client_ca_file", ("daemon", "tls", "client_ca_file"))]:
            f = dig(cfg, *path)
            if f is None:
                continue
            under = [m for m in mounts if str(f).startswith(m.rstrip("/") + "/")]
            if not under:
                rep.fail("%s: config %s %s is under no volumeMount of topogangd (%s)" % (label, ".".join(path), f, ", ".join(mounts)))
            elif "secret" not in vols.get(mounts[under[0]], {}):
                rep.fail("%s: config %s %s is mounted from %s, not a Secret" % (label, ".".join(path), f, mounts[under[0]]))
        grpc = dig(cfg, "daemon", "grpc")
        if grpc and bool(dig(values, "daemon", "drainRbac")) != (dig(grpc, "access_review") is not None):
            rep.fail("%s: daemon.drainRbac=%r but daemon.grpc.access_review=%r"
                     % (label, dig(values, "daemon", "drainRbac"), dig(grpc, "access_review")))
        if bool(dig(values, "daemon", "agentTokensSecret")) != bool(dig(grpc, "token_file")):
            rep.fail("%s: daemon.agentTokensSecret=%r but daemon.grpc.token_file=%r" % (
                label, dig(values, "daemon", "agentTokensSecret"), dig(grpc, "token_file")))
        insecure = bool(dig(values, "agent", "enabled") and dig(values, "agent", "allowUnauthenticated"))
        if insecure != bool(dig(grpc, "allow_unauthenticated_agents")):
            rep.fail("%s: agent.allowUnauthenticated with agents=%s but allow_unauthenticated_agents=%r"
                     % (label, insecure, dig(grpc, "allow_unauthenticated_agents")))
        if bool(dig(values, "tls", "enabled")) != bool(dig(cfg, "daemon", "tls")):
            rep.fail("%s: tls.enabled=%s but daemon.tls=%r" % (label, dig(values, "tls", "enabled"), dig(cfg, "daemon", "tls")))
        if dig(cfg, "daemon", "leader_election", "lease_namespace") != NS:
            rep.fail("%s: leader_election.lease_namespace is not the release namespace" % label)

    # -- the Service in front of topogangd and the ports the others use
    dsvc = [s for s in objs("Service", NS) if matches(dig(s, "spec", "selector"), dig(dtpl, "metadata", "labels") or {})
            and not dig(s, "spec", "clusterIP") == "None"]
    dports = container_ports(dtpl)

    def svc_port_for(container_port_name):
        for s in dsvc:
            for p in dig(s, "spec", "ports") or []:
                tp = p.get("targetPort")
                if tp == container_port_name or tp == dports.get(container_port_name):
                    return dig(s, "metadata", "name"), p.get("port")
        return None, None

    if cfg is not None:
        http_port = dig(cfg, "daemon", "http_port") or 8888
        if dports.get("http") != http_port:
            rep.fail("%s: topogangd's port named http is %s, daemon.http_port is %s" % (label, dports.get("http"), http_port))
        if dig(cfg, "daemon", "tls") and dports.get("health") != dig(cfg, "daemon", "health_port"):
            rep.fail("%s: under TLS the port named health (%s) is not daemon.health_port (%s)"
                     % (label, dports.get("health"), dig(cfg, "daemon", "health_port")))
        for probe in ("readinessProbe", "livenessProbe"):
            want_port = "health" if dig(cfg, "daemon", "tls") else "http"
            if dig(dc, probe, "httpGet", "port") != want_port:
                rep.fail("%s: topogangd %s is on %s, not %s (kubelet has no client certificate under TLS)"
                         % (label, probe, dig(dc, probe, "httpGet", "port"), want_port))
        grpc_addr = dig(cfg, "daemon", "grpc", "address")
        if grpc_addr and dports.get("grpc") != int(str(grpc_addr).rsplit(":", 1)[-1]):
            rep.fail("%s: topogangd's port named grpc (%s) is not the port of daemon.grpc.address %s" % (label, dports.get("grpc"), grpc_addr))
        if not grpc_addr and "grpc" in dports:
            rep.fail("%s: a grpc port without daemon.grpc" % label)

    # -- kube-scheduler: its config file, the extender entry pointing at topogangd's Service
    scheds = [(o, t) for o, t in pods if any("kube-scheduler" in " ".join(map(str, c.get("command") or []))
                                             for c in dig(t, "spec", "containers") or [])]
    if dig(values, "scheduler", "enabled") is not False and not scheds:
        rep.fail("%s: scheduler.enabled but no kube-scheduler Deployment" % label)
    if dig(values, "scheduler", "enabled") is False and scheds:
        rep.fail("%s: scheduler.enabled=false but a kube-scheduler is rendered" % label)
    for o, t in scheds:
        who = "%s: kube-scheduler %s" % (label, dig(o, "metadata", "name"))
        c = dig(t, "spec", "containers")[0]
        conf = [a.split("=", 1)[1] for a in map(str, c.get("command", []) + c.get("args", [])) if a.startswith("--config=")]
        smounts = {vm.get("mountPath"): vm.get("name") for vm in c.get("volumeMounts") or []}
        svols = {v.get("name"): v for v in dig(t, "spec", "volumes") or []}
        if not conf:
            rep.fail("%s: no --config=FILE" % who)
            continue
        cmn = dig(svols.get(smounts.get(os.path.dirname(conf[0]))), "configMap", "name")
        cm = [x for x in objs("ConfigMap", NS) if dig(x, "metadata", "name") == cmn]
        text = dig(cm[0], "data", os.path.basename(conf[0])) if cm else None
        if not isinstance(text, str):
            rep.fail("%s: --config=%s is not a key of a ConfigMap mounted at %s" % (who, conf[0], os.path.dirname(conf[0])))
            continue
        ksc = yaml.safe_load(text)
        if dig(ksc, "kind") != "KubeSchedulerConfiguration" or dig(ksc, "apiVersion") != "kubescheduler.config.k8s.io/v1":
            rep.fail("%s: %s is not a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration" % (who, conf[0]))
        qps, burst = dig(ksc, "clientConnection", "qps"), dig(ksc, "clientConnection", "burst")
        if not isinstance(qps, (int, float)) or qps < 200 or not isinstance(burst, int) or burst < qps:
            rep.fail("%s: clientConnection qps %r / burst %r: below 200 / qps, refused binds' status writes "
                     "stall kube-scheduler's loop (docs/extender.md)" % (who, qps, burst))
        exts = dig(ksc, "extenders") or []
        if len(exts) != 1:
            rep.fail("%s: expected one extender, found %d" % (who, len(exts)))
            continue
        ext = exts[0]
        if cfg is not None:
            svc, port = svc_port_for("http")
            tls = bool(dig(cfg, "daemon", "tls"))
            want = "%s://%s.%s.svc:%s%s" % ("https" if tls else "http", svc, NS, port, dig(cfg, "daemon", "url_prefix") or "")
            if svc is None or ext.get("urlPrefix") != want:
                rep.fail("%s: extender urlPrefix %s is not topogangd's Service port for the http container port (%s)"
                         % (who, ext.get("urlPrefix"), want))
            if bool(ext.get("enableHTTPS")) != tls:
                rep.fail("%s: enableHTTPS=%s while daemon.tls is %s" % (who, ext.get("enableHTTPS"), "on" if tls else "off"))
            if tls and not dig(ext, "tlsConfig", "caFile"):
                rep.fail("%s: HTTPS without tlsConfig.caFile accepts any server certificate" % who)
            if dig(cfg, "daemon", "tls", "client_ca_file") and not (dig(ext, "tlsConfig", "certFile") and dig(ext, "tlsConfig", "keyFile")):
                rep.fail("%s: topogangd requires a client certificate but kube-scheduler has none" % who)
            for k in ("caFile", "certFile", "keyFile"):
                f = dig(ext, "tlsConfig", k)
                if f and not any(str(f).startswith(m.rstrip("/") + "/") for m in smounts):
                    rep.fail("%s: tlsConfig.%s %s is under no volumeMount (%s)" % (who, k, f, ", ".join(smounts)))
            names_ok = dig(cfg, "daemon", "scheduler_names")
            for prof in dig(ksc, "profiles") or []:
                if names_ok is not None and prof.get("schedulerName") not in names_ok:
                    rep.fail("%s: profile %s is not in daemon.scheduler_names %s: topogangd would refuse its pods"
                             % (who, prof.get("schedulerName"), names_ok))
            mr = [r.get("name") for r in ext.get("managedResources") or []]
            if mr != [dig(cfg, "daemon", "gpu_resource")]:
                rep.fail("%s: managedResources %s is not daemon.gpu_resource %s" % (who, mr, dig(cfg, "daemon", "gpu_resource")))
            bw, ht = dig(cfg, "daemon", "bind_window_ms"), duration_ms(ext.get("httpTimeout"))
            if bw is not None and (ht is None or bw >= ht):
                rep.fail("%s: daemon.bind_window_ms %s is not below the extender httpTimeout %s" % (who, bw, ext.get("httpTimeout")))
            if tls:
                host = "%s.%s.svc" % (svc, NS)
                certs = [x for x in objs("Certificate", NS) if dig(x, "spec", "secretName") == dig(vols.get("tls"), "secret", "secretName")]
                for x in certs:
                    if host not in (dig(x, "spec", "dnsNames") or []):
                        rep.fail("%s: topogangd's Certificate %s does not name %s, the urlPrefix host"
                                 % (label, dig(x, "metadata", "name"), host))

    # -- agents: --server is topogangd's gRPC Service port, the token file is mounted
    grpc_cfg = dig(cfg, "daemon", "grpc")
    for o, t in pods:
        if o["kind"] != "DaemonSet":
            continue
        c = dig(t, "spec", "containers")[0]
        who = "%s: DaemonSet %s" % (label, dig(o, "metadata", "name"))
        a = [str(x) for x in c.get("args") or []]
        server = [x.split("=", 1)[1] for x in a if x.startswith("--server=")]
        svc, port = svc_port_for("grpc")
        want = "%s.%s.svc:%s" % (svc, NS, port)
        if not server or svc is None or server[0] != want:
            rep.fail("%s: --server=%s is not topogangd's gRPC Service port %s" % (who, server[0] if server else None, want))
        amounts = [vm.get("mountPath") for vm in c.get("volumeMounts") or []]
        for x in a:
            if x.startswith("--token-file=") and not any(x.split("=", 1)[1].startswith(m.rstrip("/") + "/") for m in amounts):
                rep.fail("%s: %s is under no volumeMount (%s)" % (who, x, amounts))
        sa_token = bool(dig(values, "agent", "serviceAccountToken", "enabled")) and not dig(values, "agent", "tokenSecret")
        if bool(dig(values, "agent", "tokenSecret") or sa_token) != any(x.startswith("--token-file=") for x in a):
            rep.fail("%s: agent.tokenSecret=%r, serviceAccountToken=%s but args %s"
                     % (who, dig(values, "agent", "tokenSecret"), sa_token, a))
        # The projected token: the audience topogangd's TokenReview asks for, the ServiceAccount
        # it accepts as agents.
        vols = {v.get("name"): v for v in dig(t, "spec", "volumes") or []}
        sources = dig(vols.get("token"), "projected", "sources") or []
        sat = [x["serviceAccountToken"] for x in sources if isinstance(x, dict) and "serviceAccountToken" in x]
        if sa_token != bool(sat):
            rep.fail("%s: serviceAccountToken=%s but projected token volume %s" % (who, sa_token, sat))
        if sat and (sat[0].get("audience") not in (dig(grpc_cfg, "token_review", "audiences") or [])
                    or dig(t, "spec", "serviceAccountName") is None
                    or "%s/%s" % (NS, dig(t, "spec", "serviceAccountName"))
                    not in (dig(grpc_cfg, "token_review", "agent_service_accounts") or [])):
            rep.fail("%s: projected token (audience %s, ServiceAccount %s) is not what daemon.grpc.token_review "
                     "accepts (%s)" % (who, sat[0].get("audience"), dig(t, "spec", "serviceAccountName"),
                                       dig(grpc_cfg, "token_review")))
    if bool(dig(values, "agent", "enabled")) != any(o["kind"] == "DaemonSet" for o, _ in pods):
        rep.fail("%s: agent.enabled=%s but the agent DaemonSet is %srendered" % (
            label, dig(values, "agent", "enabled"), "" if any(o["kind"] == "DaemonSet" for o, _ in pods) else "not "))

    # -- cert-manager objects
    user_issuer = dig(values, "tls", "certManager", "issuer", "name")
    for x in objs("Certificate", NS):
        ref = dig(x, "spec", "issuerRef") or {}
        if ref.get("name") in names("Issuer", NS) and ref.get("kind", "Issuer") == "Issuer":
            continue
        if user_issuer and ref.get("name") == user_issuer and ref.get("kind") == dig(values, "tls", "certManager", "issuer", "kind", default="Issuer"):
            continue
        rep.fail("%s: Certificate %s: issuerRef %s is neither a rendered Issuer nor tls.certManager.issuer"
                 % (label, dig(x, "metadata", "name"), ref))
    if dig(values, "tls", "enabled") and dig(values, "tls", "mode", default="certManager") == "certManager":
        if not objs("Certificate", NS):
            rep.fail("%s: tls with cert-manager but no Certificate" % label)
    elif objs("Certificate") or objs("Issuer"):
        rep.fail("%s: cert-manager objects rendered without tls.enabled + mode certManager" % label)

    # -- NetworkPolicy: selects topogangd, names its ports, peers are the chart's pods or the user's
    for np_ in objs("NetworkPolicy", NS):
        who = "%s: NetworkPolicy %s" % (label, dig(np_, "metadata", "name"))
        sel = dig(np_, "spec", "podSelector", "matchLabels")
        selected = pods_selected(sel)
        if not selected:
            rep.fail("%s: podSelector %s selects no pod the chart renders" % (who, sel))
        user_peers = (dig(values, "networkPolicy", "extenderFrom") or []) + (dig(values, "networkPolicy", "grpcFrom") or [])
        prom = dig(values, "networkPolicy", "prometheus") or {}
        for rule in dig(np_, "spec", "ingress") or []:
            for p in rule.get("ports") or []:
                for o, t in selected:
                    if isinstance(p.get("port"), str) and p["port"] not in container_ports(t):
                        rep.fail("%s: port %s is not a port of %s" % (who, p["port"], dig(o, "metadata", "name")))
            for peer in rule.get("from") or []:
                if peer in user_peers:
                    continue
                if set(peer) <= {"namespaceSelector", "podSelector"} and peer.get("namespaceSelector", {}) == (prom.get("namespaceSelector") or {}) \
                        and (prom.get("namespaceSelector") or prom.get("podSelector")) and peer.get("podSelector", {}) == (prom.get("podSelector") or {}):
                    continue
                if not pods_selected(dig(peer, "podSelector", "matchLabels")):
                    rep.fail("%s: peer %s is neither a pod the chart renders nor a peer from values" % (who, peer))
        if dig(values, "tls", "enabled") and (prom.get("namespaceSelector") or prom.get("podSelector")):
            if not any(p.get("port") == "health" for r in dig(np_, "spec", "ingress") or [] for p in r.get("ports") or []):
                rep.fail("%s: under TLS the metrics rule must allow the health port" % who)

    # -- monitoring: ServiceMonitor -> Service port; rules; dashboard
    for sm in objs("ServiceMonitor", NS):
        who = "%s: ServiceMonitor %s" % (label, dig(sm, "metadata", "name"))
        svcs = [s for s in objs("Service", NS) if matches(dig(sm, "spec", "selector", "matchLabels"), dig(s, "metadata", "labels") or {})]
        if NS not in (dig(sm, "spec", "namespaceSelector", "matchNames") or []):
            rep.fail("%s: namespaceSelector does not include %s" % (who, NS))
        if not svcs:
            rep.fail("%s: selects no Service the chart renders" % who)
        for e in dig(sm, "spec", "endpoints") or []:
            for s in svcs:
                sp = {p.get("name"): p for p in dig(s, "spec", "ports") or []}
                if e.get("port") not in sp:
                    rep.fail("%s: endpoint port %s is not a port of Service %s" % (who, e.get("port"), dig(s, "metadata", "name")))
                elif cfg is not None:
                    want = dig(cfg, "daemon", "health_port") if dig(cfg, "daemon", "tls") else dig(cfg, "daemon", "http_port")
                    if sp[e["port"]].get("targetPort") != want:
                        rep.fail("%s: scrapes port %s, not the plain-HTTP /metrics port %s" % (who, sp[e["port"]].get("targetPort"), want))
    for pr in objs("PrometheusRule", NS):
        rules = [r for g in dig(pr, "spec", "groups") or [] for r in g.get("rules") or []]
        if not rules:
            rep.fail("%s: PrometheusRule without rules" % label)
        for r in rules:
            if not isinstance(r.get("alert"), str) or not isinstance(r.get("expr"), str):
                rep.fail("%s: alert rule without alert/expr strings: %s" % (label, r))
            elif 'namespace="%s"' % NS not in r["expr"]:
                rep.fail("%s: alert %s does not select the release namespace: %s" % (label, r["alert"], r["expr"]))
            for v in (r.get("annotations") or {}).values():
                # Prometheus' template functions humanize and humanizeDuration
                # (https://prometheus.io/docs/prometheus/latest/configuration/template_reference/).
                if "{{" in v and not re.search(r"\{\{ \$value( \| humanize(Duration)?)? \}\}", v):
                    rep.fail("%s: alert %s: annotation with a template Prometheus cannot read: %s" % (label, r["alert"], v))
    for cmap in objs("ConfigMap", NS):
        if dig(cmap, "metadata", "labels", "grafana_dashboard") == "1":
            with open(os.path.join(chart_dir, "dashboards", "topogang.json")) as f:
                want = json.load(f)
            for k, v in (cmap.get("data") or {}).items():
                try:
                    if json.loads(v) != want:
                        rep.fail("%s: dashboard %s differs from dashboards/topogang.json" % (label, k))
                except ValueError as e:
                    rep.fail("%s: dashboard %s is not JSON: %s" % (label, k, e))

    if len(rep.failures) == n0:
        rep.ok("%s: %d objects (%s): names, namespaces, volumes, ports, probes, Services, RBAC, "
               "extender urlPrefix, agents, cert-manager, policies, monitoring all consistent"
               % (label, len(docs), ", ".join(sorted({d["kind"] for d in docs}))))


def sprig_int(v):
    try:
        return int(str(v))
    except ValueError:
        return None


def chart_fail_messages(chart_dir):
    """The literal start of every `fail` message in the templates."""
    out = []
    tdir = os.path.join(chart_dir, "templates")
    for fn in sorted(os.listdir(tdir)):
        with open(os.path.join(tdir, fn)) as f:
            text = f.read()
        for m in re.finditer(r'fail \(?(?:printf )?"((?:[^"\\]|\\.)*)"', text):
            out.append(m.group(1).split("%")[0].replace('\\"', '"'))
    return out


def check_chart(chart_dir, topogangd):
    rep = Report()
    tmp = tempfile.mkdtemp()
    try:
        def render(values, sets, **kw):
            vf = os.path.join(tmp, "values.yaml")
            with open(vf, "w") as f:
                yaml.safe_dump(values, f)
            return hr.render_chart(chart_dir, sets, [vf], namespace=NS, warn=lambda m: None, **kw)

        schema_checked = hr.validate_schema(hr.Chart(chart_dir), {}) is not None
        if not schema_checked:
            print("note: python3 jsonschema is not importable: renders do not check values.schema.json")
        for name, values, sets, kw in VARIANTS:
            try:
                manifests, notes = render(values, sets, **kw)
            except hr.TemplateError as e:
                rep.fail("%s: the chart does not render: %s" % (name, e))
                continue
            # the values as the templates saw them, for the expectations
            eff = hr.coalesce(hr.merge_maps(hr._as_helm_values(values), parse_sets(sets)),
                              hr.Chart(chart_dir).values)
            check_render(manifests, eff, name, rep, topogangd, chart_dir)
            if notes is None or "topogang is installed in %s" % NS not in notes:
                rep.fail("%s: NOTES.txt did not render (%r)" % (name, notes))
        # the scheduler image follows the cluster version unless set
        ms, _ = render({}, [], kube_ver="v1.31.4-gke.1256000")
        img = [c["image"] for m in ms for c in dig(yaml.safe_load(m.content), "spec", "template", "spec", "containers") or []
               if "kube-scheduler" in c.get("image", "")]
        if img != ["registry.k8s.io/kube-scheduler:v1.31.4"]:
            rep.fail("kube-version v1.31.4-gke.1256000: kube-scheduler image %s, want registry.k8s.io/kube-scheduler:v1.31.4" % img)

        covered = set()
        for name, values, sets, want in FAIL_CASES:
            for skip in ([False, True] if schema_checked else [True]):
                try:
                    render(values, sets, skip_schema=skip)
                except hr.TemplateError as e:
                    msg = str(e)
                    if "values don't meet the specifications of the schema" in msg and not skip:
                        rep.ok("refused: %s (by values.schema.json)" % name)
                        continue
                    if msg.startswith("execution error at (topogang/templates/") and want in msg:
                        rep.ok("refused: %s: %s" % (name, msg))
                        covered.update(f for f in chart_fail_messages(chart_dir) if f and msg.split("): ", 1)[-1].startswith(f))
                    else:
                        rep.fail("refused: %s: failed, but not with the chart's message %r: %s" % (name, want, msg))
                    continue
                rep.fail("refused: %s: rendered, but the chart must fail with %r%s"
                         % (name, want, "" if skip else " (schema validation on)"))
        for f in chart_fail_messages(chart_dir):
            if f not in covered:
                rep.fail("the chart's fail %r is exercised by no case of FAIL_CASES" % f)

        # the command line, as a user runs it
        cli = [sys.executable, os.path.join(HERE, "helm_render.py"), chart_dir, "-n", NS]
        p = subprocess.run(cli, capture_output=True, text=True)
        if p.returncode != 0 or not p.stdout.startswith("---\n# Source: topogang/templates/"):
            rep.fail("helm_render.py %s: exit %d, stdout %r, stderr %s" % (chart_dir, p.returncode, p.stdout[:80], p.stderr))
        p = subprocess.run(cli + ["--set", "agent.enabled=true", "--set", "agent.serviceAccountToken.enabled=false"],
                           capture_output=True, text=True)
        if p.returncode != 1 or "Error: execution error at (topogang/templates/agent.yaml" not in p.stderr or p.stdout:
            rep.fail("helm_render.py --set agent.enabled=true,agent.serviceAccountToken.enabled=false: want exit 1 "
                     "and the chart's fail message, got %d: %s" % (p.returncode, p.stderr))
        else:
            rep.ok("helm_render.py exits 1 with the chart's fail message: " + p.stderr.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp)
    return rep


def parse_sets(sets):
    d = {}
    for s in sets:
        hr.parse_set(s, d)
    return d


# === negative cases: break the chart, the checks must notice =====================================
# name -> (file under helm/topogang, regex, replacement, what the failure must say)
REJECT_CASES = {
    "mount_without_volume": ("templates/daemon.yaml", r"(- name: )agent-tokens(\n\s+secret:)", r"\1agent-token\2",
                             "volumeMount agent-tokens"),
    "url_prefix_wrong_port": ("templates/scheduler.yaml",
                              r'(svc:\{\{ include ")topogang\.httpPort(" \. \}\}\{\{ \.Values\.config\.daemon\.url_prefix)',
                              r"\1topogang.grpcPort\2", "extender urlPrefix"),
    "probe_port_not_a_container_port": ("templates/daemon.yaml", r"\{name: http, containerPort:", "{name: web, containerPort:",
                                        "readinessProbe port http is not one of its container ports"),
    "fail_guard_removed": ("templates/_helpers.tpl",
                           r'\{\{- fail "agent\.enabled needs agent\.tokenSecret[^\n]*\n', "",
                           "agent.enabled without an identity: rendered, but the chart must fail"),
    "config_key_topogangd_rejects": ("templates/_helpers.tpl", r'"lease_duration_ms"', '"lease_duration"',
                                     "instead of reaching the in-cluster step"),
    "configmap_misindented": ("templates/configmap.yaml", r'(include "topogang\.config" \. \| nindent )4', r"\g<1>2",
                              "ConfigMap topogangd-config"),
    "secret_nothing_makes": ("templates/tls.yaml", r"secretName: topogangd-tls", "secretName: topogangd-cert",
                             "Secret topogangd-tls is neither rendered"),
    "label_not_a_string": ("templates/daemon.yaml", r'prometheus\.io/port: \{\{ include "topogang\.metricsPort" \. \| quote \}\}',
                           'prometheus.io/port: {{ include "topogang.metricsPort" . }}', "is a int, not a string"),
    "client_qps_default": ("values.yaml", r"clientQps: 300", "clientQps: 50", "clientConnection qps 50"),
}


def reject(case, topogangd):
    if case not in REJECT_CASES:
        print("helm_render_test: unknown reject case %s (known: %s)" % (case, ", ".join(REJECT_CASES)))
        return 2
    fn, rx, repl, want = REJECT_CASES[case]
    tmp = tempfile.mkdtemp()
    try:
        chart = os.path.join(tmp, "topogang")
        shutil.copytree(os.path.join(ROOT, "helm", "topogang"), chart)
        path = os.path.join(chart, fn)
        with open(path) as f:
            text = f.read()
        broken, n = re.subn(rx, repl, text)
        if n == 0:
            print("helm_render_test: reject %s: the edit did not apply to %s (the template changed?)" % (case, fn))
            return 2
        with open(path, "w") as f:
            f.write(broken)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rep = check_chart(chart, topogangd)
        hits = [f for f in rep.failures if want in f]
        if hits:
            print("reject %s: the chart checks caught it:\n  %s" % (case, hits[0].splitlines()[0]))
            return 0
        print(out.getvalue())
        print("reject %s: the chart checks %s, but no failure says %r" % (
            case, "failed" if rep.failures else "passed the broken chart", want))
        return 1
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if len(argv) >= 1 and argv[0] == "unit":
        prog = unittest.main(module=__name__, argv=[sys.argv[0], "-v"] + argv[1:], exit=False)
        return 0 if prog.result.wasSuccessful() else 1
    if len(argv) >= 2 and argv[0] == "chart":
        topogangd = os.path.abspath(argv[1])
        chart = os.path.abspath(argv[2]) if len(argv) > 2 else os.path.join(ROOT, "helm", "topogang")
        rep = check_chart(chart, topogangd)
        if rep.failures:
            print("helm_render_test chart: %d failure(s)" % len(rep.failures))
            return 1
        print("helm_render_test chart: all checks passed")
        return 0
    if len(argv) == 3 and argv[0] == "reject":
        return reject(argv[1], os.path.abspath(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
