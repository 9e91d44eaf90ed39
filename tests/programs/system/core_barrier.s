# LNC=2 on a chip (tests/test_system_run.cpp, SystemRunPairs): the cores pair up as logical
# NeuronCores (CORE 2k and 2k + 1, cc group `pair`). Each core
#   - publishes its input to its half of its pair's shared HBM tensor (a DMA through SBUF),
#   - meets its partner at a core_barrier (nki.isa.core_barrier) once that DMA has signalled,
#   - then reads its partner's half back out (PEER), which the barrier makes safe;
# and all_reduces its input over the pair (AR: member 0's + member 1's, in FP32).
# The odd core of each pair publishes after a 64 KiB copy, so the barrier waits for it.
.equ N 1024
.equ RANK CHIP*CORES+CORE
.equ BASE CORE*0x100000
.equ SHARED (CORE/2)*0x100000+0x80000
.tensor IN hbm addr=BASE dtype=fp32 shape=N init=random seed=7+RANK
.tensor FILL hbm addr=BASE+0x10000 dtype=fp32 shape=8x2048 init=random seed=99
.tensor FILL_OUT hbm addr=BASE+0x30000 dtype=fp32 shape=8x2048
.tensor AR hbm addr=BASE+0x2000 dtype=fp32 shape=N output
.tensor PEER hbm addr=BASE+0x3000 dtype=fp32 shape=N output
.tensor T_sb sbuf addr=0 dtype=fp32 shape=8x128
.tensor P_sb sbuf addr=0x200 dtype=fp32 shape=8x128
.tensor F_sb sbuf addr=0x400 dtype=fp32 shape=8x2048
.sem filled
.sem stored
.sem loaded
.sem published
.sem met
.sem back
.queue sp
.if CORE%2==1
  dma_copy engine=2 dir=hbm_to_sbuf hbm_addr=FILL sbuf_addr=F_sb bytes=8192 count1=8 hbm_stride1=8192 sbuf_stride1=SBUF_PARTITION signal=filled+=1
  dma_copy engine=3 dir=sbuf_to_hbm hbm_addr=FILL_OUT sbuf_addr=F_sb bytes=8192 count1=8 hbm_stride1=8192 sbuf_stride1=SBUF_PARTITION wait=filled>=1 signal=stored+=1
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=IN sbuf_addr=T_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=stored>=1 signal=loaded+=1
.else
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=IN sbuf_addr=T_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endif
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=SHARED+(CORE%2)*N*4 sbuf_addr=T_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=loaded>=1 signal=published+=1
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=SHARED+(1-CORE%2)*N*4 sbuf_addr=P_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=met>=1 signal=back+=1
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=PEER sbuf_addr=P_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=back>=1
.queue cc
  all_reduce dtype=fp32 src=IN dst=AR bytes=N*4 group=pair
  core_barrier group=pair wait=published>=1 signal=met+=1
