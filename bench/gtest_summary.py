#!/usr/bin/env python3
"""Adds one stage's outcome to the GPU session's test summary (a JSON file), and prints it.

  gtest_summary.py SUMMARY.json gtest NAME XML RC     # a GoogleTest executable's XML output
  gtest_summary.py SUMMARY.json sanitizer NAME LOG RC  # a compute-sanitizer run (one test)
  gtest_summary.py SUMMARY.json script NAME LOG RC     # a script ending 'N passed, M failed' 

The summary is {"passed", "failed", "skipped", "stages": [{name, passed, failed, skipped,
status}]}; bench/harness.py copies passed/failed into the results' "tests". A stage whose
executable crashed or timed out without writing its XML counts as one failed test, so a run
that failed can never read as passed.
"""
from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def gtest_stage(name: str, xml_path: Path, rc: int) -> dict:
    if not xml_path.exists():
        return {"name": name, "passed": 0, "failed": 1, "skipped": 0,
                "status": f"no XML (exit {rc}{', timed out' if rc in (124, 137) else ''})"}
    root = ET.parse(xml_path).getroot()
    passed = failed = skipped = 0
    failed_names = []
    for case in root.iter("testcase"):
        full = f"{case.get('classname')}.{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            failed_names.append(full)
        elif case.get("result") == "skipped" or case.find("skipped") is not None \
                or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    status = f"exit {rc}"
    if rc != 0 and failed == 0:  # crashed after writing a partial XML, or a test-less failure
        failed, status = 1, f"exit {rc} with no failed test in the XML"
    stage = {"name": name, "passed": passed, "failed": failed, "skipped": skipped, "status": status}
    if failed_names:
        stage["failed_tests"] = failed_names[:50]
    return stage


def sanitizer_stage(name: str, log_path: Path, rc: int) -> dict:
    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    # memcheck ends with "ERROR SUMMARY: N errors"; racecheck with
    # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
    m = re.search(r"ERROR SUMMARY: (\d+) error", text)
    if not m:
        m = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", text)
    errors = int(m.group(1)) if m else None
    # The test under the sanitizer must have run and passed: a filter that matched nothing (or a
    # skip) would give a clean summary while checking nothing.
    ran = re.search(r"\[  PASSED  \] [1-9]\d* test", text) is not None and "[  FAILED  ]" not in text
    ok = rc == 0 and errors == 0 and ran
    status = (f"exit {rc}, " + (f"{errors} errors" if errors is not None else "no ERROR SUMMARY line")
              + ("" if ran else ", the test under it did not run and pass"))
    return {"name": name, "passed": int(ok), "failed": int(not ok), "skipped": 0, "status": status}


def script_stage(name: str, log_path: Path, rc: int) -> dict:
    """A script that ends its output with 'NAME: N passed, M failed'."""
    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    found = re.findall(r"(\d+) passed, (\d+) failed", text)
    if not found:
        return {"name": name, "passed": 0, "failed": 1, "skipped": 0,
                "status": f"exit {rc}, no 'N passed, M failed' line"}
    passed, failed = map(int, found[-1])
    if rc != 0 and failed == 0:
        failed = 1
    return {"name": name, "passed": passed, "failed": failed, "skipped": 0, "status": f"exit {rc}"}


def main(argv: list[str]) -> int:
    summary_path, kind, name, path, rc = Path(argv[1]), argv[2], argv[3], Path(argv[4]), int(argv[5])
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"stages": []}
    stage = {"gtest": gtest_stage, "sanitizer": sanitizer_stage, "script": script_stage}[kind](name, path, rc)
    summary["stages"].append(stage)
    for key in ("passed", "failed", "skipped"):
        summary[key] = sum(s[key] for s in summary["stages"])
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"  {name}: {stage['passed']} passed, {stage['failed']} failed, {stage['skipped']} skipped "
          f"({stage['status']})")
    for t in stage.get("failed_tests", []):
        print(f"    FAILED {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
