# LNC=2 (`ncore tlm run --lnc 2`; tests/test_system_run.cpp, SystemRunLnc2): CORE 2k and 2k + 1
# of a chip are one logical NeuronCore, one rank of the collectives. Each core writes its half of
# its pair's src in their shared HBM; both cores issue the collective with the same src and dst,
# and the engine reads each pair's src and writes its dst once. Each core copies the sum out to an
# output of its own (AR, after the collective's signal); the gathered rows are an output of both
# cores of a pair, read from their shared HBM.
#   all_reduce  FP32, group cores (the CORES / 2 logical cores of this chip)
#   all_gather  FP32, group all (every logical core of the system, in rank order)
.equ N 256
.equ RANK CHIP*CORES+CORE
.equ SHARED (CORE/2)*0x100000+0x80000
.tensor IN hbm addr=CORE*0x100000 dtype=fp32 shape=N/2 init=random seed=3+RANK
.tensor SRC hbm addr=SHARED dtype=fp32 shape=N
.tensor SUM hbm addr=SHARED+0x1000 dtype=fp32 shape=N
.tensor GATHERED hbm addr=SHARED+0x2000 dtype=fp32 shape=N*CHIPS*CORES/2 output
.tensor AR hbm addr=CORE*0x100000+0x1000 dtype=fp32 shape=N output
.tensor T_sb sbuf addr=0 dtype=fp32 shape=1x128
.tensor S_sb sbuf addr=0x200 dtype=fp32 shape=1x256
.sem loaded
.sem written
.sem reduced
.sem summed_in
.queue sp
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=IN sbuf_addr=T_sb bytes=N*2 signal=loaded+=1
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=SRC+(CORE%2)*N*2 sbuf_addr=T_sb bytes=N*2 wait=loaded>=1 signal=written+=1
  dma_copy engine=2 dir=hbm_to_sbuf hbm_addr=SUM sbuf_addr=S_sb bytes=N*4 wait=reduced>=1 signal=summed_in+=1
  dma_copy engine=3 dir=sbuf_to_hbm hbm_addr=AR sbuf_addr=S_sb bytes=N*4 wait=summed_in>=1
.queue cc
  all_reduce dtype=fp32 src=SRC dst=SUM bytes=N*4 group=cores wait=written>=1 signal=reduced+=1
  all_gather dtype=fp32 src=SRC dst=GATHERED bytes=N*4 group=all algo=ring
