#!/usr/bin/env python3
"""schema/rules.schema.json against the rule loader.

- the schema is a valid draft-07 schema and accepts every shipped file in etc/rules.d;
- its cause and action enums, and docs/rules.md's cause table, are what scripts/gen_catalog.py
  writes from the catalog (`autoheal rules catalog --json`): this test fails when they are out of
  date (`make catalog` writes them);
- the keys it allows on items, conditions and escalation steps are the lists the loader itself
  prints in its error messages (`autoheal rules check --json` on a probe file), so the schema
  fails this test when the code's lists change;
- each tests/fixtures/rules-schema/bad-*.yaml is rejected by the schema AND by the loader, and
  each good-*.yaml is accepted by both (loaded after etc/rules.d, as a site file would be).

Needs python3-jsonschema and python3-yaml (scripts/deps.sh installs them).
Environment: AUTOHEAL_CLI (the autoheal program), AUTOHEAL_SOURCE_DIR (the repository root).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

try:
    import jsonschema
    import yaml
except ImportError as e:  # a missing module is a failure, not a skip
    sys.exit(f"rules_schema_test: {e}: install python3-jsonschema and python3-yaml (make deps)")

SOURCE = os.environ.get("AUTOHEAL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("AUTOHEAL_CLI", "")
SCHEMA_PATH = os.path.join(SOURCE, "schema", "rules.schema.json")
RULES_DIR = os.path.join(SOURCE, "etc", "rules.d")
FIXTURES = os.path.join(SOURCE, "tests", "fixtures", "rules-schema")

# One problem of each kind whose message lists what the loader accepts.
PROBE = """\
- rule: probe-rule-key
  match: {xid: 79}
  cause: faulty_gpu
  probe_key: 1
- signature: probe-signature-key
  regex: probe
  probe_key: 1
- list: probe-list-key
  items: [1]
  probe_key: 1
- rule: probe-condition-key
  match: {xid: 79, probe_key: 1}
  cause: faulty_gpu
- rule: probe-escalate-key
  match: {xid: 79}
  cause: faulty_gpu
  escalate:
    - when: {probe_key: 1}
      probe_key: 1
"""


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def split_list(text):
    return [w.strip() for w in text.split(",") if w.strip()]


def rules_check(*paths):
    """Runs `autoheal rules check --json PATHS`; returns (exit code, parsed JSON)."""
    proc = subprocess.run([CLI, "rules", "check", "--json", *paths], capture_output=True,
                          text=True, timeout=60, check=False)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"autoheal rules check: not JSON (exit {proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}") from None
    return proc.returncode, out


class RulesSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            cls.schema = json.load(f)
        cls.validator = jsonschema.Draft7Validator(cls.schema)
        cls.defs = cls.schema["definitions"]

    def errors(self, document):
        return sorted(self.validator.iter_errors(document), key=lambda e: list(e.absolute_path))

    def test_schema_is_valid_draft7(self):
        jsonschema.Draft7Validator.check_schema(self.schema)

    def test_every_key_has_a_description(self):
        missing = []

        def walk(node, path):
            if isinstance(node, dict):
                for key, sub in node.get("properties", {}).items():
                    if path.endswith("override"):
                        continue  # KEY: replace|append, described by the override itself
                    if "description" not in sub:
                        ref = sub.get("$ref", "")
                        target = self.defs.get(ref.rsplit("/", 1)[-1], {}) if ref else {}
                        if "description" not in target:
                            missing.append(f"{path}.{key}")
                for key, sub in node.items():
                    if key not in ("if", "then"):  # conditions on keys, not keys
                        walk(sub, f"{path}.{key}")
            elif isinstance(node, list):
                for i, sub in enumerate(node):
                    walk(sub, f"{path}[{i}]")

        walk(self.schema, "$")
        self.assertEqual(missing, [], "keys without a description")

    def test_shipped_rules_validate(self):
        files = sorted(glob.glob(os.path.join(RULES_DIR, "*.yaml")))
        self.assertGreater(len(files), 0, f"no rule files in {RULES_DIR}")
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                errs = self.errors(load_yaml(path))
                self.assertEqual(
                    [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errs], [],
                    f"{path} does not validate against {SCHEMA_PATH}")

    def test_every_shipped_rule_cites_its_documentation_and_carries_an_example(self):
        # Issue 14: a shipped rule says where it comes from (`doc`, shown by classify --explain)
        # and what it fires on (`example`, which the loader checks it fires on).
        missing = []
        for path in sorted(glob.glob(os.path.join(RULES_DIR, "*.yaml"))):
            for item in load_yaml(path) or []:
                if "rule" not in item or item.get("enabled", True) is False:
                    continue
                for key in ("doc", "example"):
                    if not item.get(key):
                        missing.append(f"{os.path.basename(path)}: {item['rule']}: no {key}")
        self.assertEqual(missing, [])

    def test_bad_fixtures_are_rejected_by_schema_and_loader(self):
        files = sorted(glob.glob(os.path.join(FIXTURES, "bad-*.yaml")))
        self.assertGreaterEqual(len(files), 5)
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                self.assertNotEqual(self.errors(load_yaml(path)), [],
                                    f"the schema accepts {path}")
                rc, out = rules_check(RULES_DIR, path)
                self.assertEqual(rc, 1, f"the loader accepts {path}: {out}")

    def test_good_fixtures_are_accepted_by_schema_and_loader(self):
        files = sorted(glob.glob(os.path.join(FIXTURES, "good-*.yaml")))
        self.assertGreaterEqual(len(files), 1)
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                errs = self.errors(load_yaml(path))
                self.assertEqual([f"{list(e.absolute_path)}: {e.message[:300]}" for e in errs],
                                 [])
                rc, out = rules_check(RULES_DIR, path)
                self.assertEqual(rc, 0, f"the loader refuses {path}: {out}")


class CatalogSyncTest(unittest.TestCase):
    """The schema's enums and the docs' cause table against the catalog."""

    def test_generated_files_are_up_to_date(self):
        proc = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "gen_catalog.py"),
                               "--cli", CLI, "--check"], capture_output=True, text=True,
                              timeout=60, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_rules_may_name_exactly_the_schema_causes(self):
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            enum = json.load(f)["definitions"]["cause"]["enum"]
        with tempfile.TemporaryDirectory() as tmp:
            for cause in enum + ["admin_resume", "lemon", "health"]:
                probe = os.path.join(tmp, f"{cause}.yaml")
                with open(probe, "w", encoding="utf-8") as f:
                    f.write(f"- rule: probe\n  match: {{xid: 79}}\n  cause: {cause}\n")
                rc, out = rules_check(RULES_DIR, probe)
                with self.subTest(cause=cause):
                    self.assertEqual(rc, 0 if cause in enum else 1, out)


class SchemaMatchesCodeTest(unittest.TestCase):
    """The loader's own lists, read from its messages, against the schema."""

    @classmethod
    def setUpClass(cls):
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            cls.defs = json.load(f)["definitions"]
        with tempfile.TemporaryDirectory() as tmp:
            probe = os.path.join(tmp, "probe.yaml")
            with open(probe, "w", encoding="utf-8") as f:
                f.write(PROBE)
            rc, out = rules_check(probe)
        if rc != 1:
            raise AssertionError(f"the probe file should be invalid: {out}")
        cls.messages = [(m["context"], m["message"]) for f in out["files"] for m in f["messages"]]

    def listed(self, pattern, context=None):
        for where, message in self.messages:
            found = re.search(pattern, message)
            if found and (context is None or where == context):
                return split_list(found.group(1))
        self.fail(f"no loader message matches {pattern!r} ({context}); got: {self.messages}")

    def keys(self, definition):
        return set(self.defs[definition]["properties"])

    def test_item_keys(self):
        for kind, definition in (("rule", "ruleItem"), ("signature", "signatureItem"),
                                 ("list", "listItem")):
            with self.subTest(item=kind):
                code = self.listed(r"unknown key 'probe_key'; expected one of: (.*)$",
                                   context=f"In {kind} 'probe-{kind}-key'")
                self.assertEqual(self.keys(definition), set(code))

    def test_condition_keys(self):
        code = set(self.listed(r"unknown condition key '[^']*'; expected (.*)$"))
        schema = set()
        for shape in self.defs["condition"]["oneOf"]:
            schema |= set(shape["properties"])
        self.assertEqual(schema, code)

    def test_escalation_keys(self):
        self.assertEqual(self.keys("escalationStep"),
                         set(self.listed(r"unknown escalate key '[^']*'; expected (.*)$")))
        when = set(self.defs["escalationStep"]["properties"]["when"]["properties"])
        self.assertEqual(when, set(self.listed(r"unknown when key '[^']*'; expected (.*)$")))


if __name__ == "__main__":
    if not CLI or not os.access(CLI, os.X_OK):
        sys.exit(f"rules_schema_test: AUTOHEAL_CLI={CLI!r} is not an executable autoheal")
    unittest.main(verbosity=2)
