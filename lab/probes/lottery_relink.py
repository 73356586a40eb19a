#!/usr/bin/env python3
"""Recompile the two 192-key E4M3 instantiations of a CMake build with one more ptxas option and
relink its library elsewhere (lottery_stage.sh). The other objects are the build's own.
  python3 lab/probes/lottery_relink.py BUILD_DIR PTXAS_OPTION OUT_DIR
LOT_FILES: the instantiations' file-name prefix (default e4m3_block192; e.g. fp16_vt_block192 for
the accurate mode's kernel)."""
import json
import os
import re
import subprocess
import sys

build, option, out = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
FILES = os.environ.get("LOT_FILES", "e4m3_block192")
os.makedirs(out, exist_ok=True)
src = os.path.join(build, "src")
link = open(os.path.join(src, "CMakeFiles/fp8attn.dir/link.txt")).read().strip()
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    if "/attn/instantiations/" + FILES not in entry["file"]:
        continue
    cmd = entry["command"]
    obj = cmd.split(" -o ")[-1].split()[0]
    new = os.path.join(out, os.path.basename(obj))
    assert "-Xptxas=-v," in cmd, "the library's nvcc flags changed: update this script"
    # The option replaces a register usage level the build already gives the file (src/CMakeLists.txt).
    cmd = re.sub(r" -Xptxas=--register-usage-level=\d+", "", cmd)
    cmd = cmd.replace(" -o " + obj, " -o " + new).replace("-Xptxas=-v,", f"-Xptxas={option},-v,")
    subprocess.run(cmd, shell=True, cwd=entry["directory"], check=True, capture_output=True)
    link = link.replace(obj, new)
link = link.replace("-o libfp8attn.so", f"-o {out}/libfp8attn.so")
subprocess.run(link, shell=True, cwd=src, check=True)
with open(os.path.join(out, "COMMIT"), "w") as f:
    f.write(f"{open(os.path.join(os.path.dirname(out), sys.argv[4] if len(sys.argv) > 4 else 'rel', 'COMMIT')).read().strip()}, ptxas {option} "
            f"on attn/instantiations/{FILES}*.cu\n")
