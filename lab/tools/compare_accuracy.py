#!/usr/bin/env python3
"""Compares the accuracy records of two GPU results files record by record (dataset, causal,
method, reference, inputs): how many have the same RMSE and max |err| bit for bit, which differ,
which one file lacks. Prints a report headed by the command and the date.
usage: python3 lab/tools/compare_accuracy.py NEW.json OLD.json"""
import json
import sys
import time


def key(r):
    return (r["dataset"], r["causal"], r["method"], r.get("reference"), r.get("inputs"))


def main():
    new, old = (json.load(open(p)) for p in sys.argv[1:3])
    print(f"# python3 {' '.join(sys.argv)}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# new: commit {new.get('commit')} {new.get('date')}; old: commit {old.get('commit')} {old.get('date')}")
    by_old = {key(r): r for r in old.get("accuracy", [])}
    same, differ, absent = 0, [], []
    for r in new.get("accuracy", []):
        o = by_old.get(key(r))
        if o is None:
            absent.append(key(r))
        elif (o.get("rmse"), o.get("max_abs")) == (r.get("rmse"), r.get("max_abs")):
            same += 1
        else:
            differ.append((key(r), o.get("rmse"), r.get("rmse"), o.get("max_abs"), r.get("max_abs")))
    datasets = sorted({r["dataset"] for r in new.get("accuracy", [])})
    print(f"datasets of the new file: {', '.join(datasets)}")
    print(f"records: {len(new.get('accuracy', []))}; equal bit for bit: {same}; different: "
          f"{len(differ)}; not in the old file: {len(absent)}")
    for d in differ:
        print("different:", d)
    for a in absent:
        print("not in the old file:", a)


if __name__ == "__main__":
    main()
