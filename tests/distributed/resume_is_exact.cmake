# A DP-SGD run stopped at step 6 and resumed from its safetensors checkpoint to
# step 12 ends with the same parameters, to the last bit, as a run of 12 steps
# straight: parameters, Poisson batches and noise all follow from the step.
#   cmake -DRUN=<mpirun and its flags> -DEXAMPLE=<dp_sgd_distributed> -DDIR=<scratch> -P ...
separate_arguments(RUN)
set(common --synthetic --train-samples 600 --test-samples 200 --batch 60 --sigma 1.0
           --clip 1.0 --lr 0.5 --momentum 0.9 --epochs 2)
set(checkpoint ${DIR}/resume_is_exact.safetensors)
file(REMOVE ${checkpoint})
function(run out)
  execute_process(COMMAND ${RUN} ${EXAMPLE} ${common} ${ARGN} OUTPUT_VARIABLE text
                  ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${ARGN} failed (${rc}):\n${text}\n${errors}")
  endif()
  string(REGEX MATCH "parameter checksum [^\n]*" line "${text}")
  set(${out} "${line}" PARENT_SCOPE)
endfunction()
run(straight --max-steps 12)
run(first_half --max-steps 6 --checkpoint ${checkpoint})
run(resumed --max-steps 12 --checkpoint ${checkpoint})
file(REMOVE ${checkpoint})
message("straight: ${straight}\nresumed:  ${resumed}")
if(NOT straight STREQUAL resumed OR straight STREQUAL "")
  message(FATAL_ERROR "the resumed run differs from the straight one")
endif()
message("resume is exact: OK")
