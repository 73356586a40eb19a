# Runs one command line and checks how it ends: its exit status is EXPECT_RC exactly (a crash, a
# signal or another status fails) and its stderr holds EXPECT_MSG (a plain substring; empty:
# no check).
#   cmake -DEXE=... "-DARGS=a;b;c" -DEXPECT_RC=2 "-DEXPECT_MSG=..." -P expect_exit.cmake
foreach(var EXE EXPECT_RC)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_exit.cmake: ${var} is not set")
  endif()
endforeach()
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" " " shown "${ARGS}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "'${shown}': exit '${rc}', want ${EXPECT_RC}\nstderr:\n${err}\nstdout:\n${out}")
endif()
if(NOT "${EXPECT_MSG}" STREQUAL "")
  string(FIND "${err}" "${EXPECT_MSG}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "'${shown}': stderr lacks '${EXPECT_MSG}'\nstderr:\n${err}")
  endif()
endif()
message(STATUS "'${shown}': exit ${rc} as expected")
