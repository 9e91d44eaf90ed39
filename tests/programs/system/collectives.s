# Collectives issued by programs (SPMD; tests/test_system_run.cpp checks every output against
# sums it computes in rank order). Every core has its own FP32 and BF16 inputs (seeded by its
# rank) and runs, on its cc queue:
#   all_reduce     FP32, group chips (the cores with this CORE on every chip), torus2d-split
#   all_reduce     BF16, group cores (the 8 cores of this chip): sums in FP32, rounded once
#   reduce_scatter FP32, group chips, ring: block CHIP of the sum
#   all_gather     FP32, group all (every core of the system), rank order
#   all_to_all     BF16, group cores
# then DMAs the all_reduce result into SBUF and back out (the data a collective wrote is there
# for the DMA after its signal).
.equ RANK CHIP*CORES+CORE
.equ BASE CORE*0x100000
.tensor IN hbm addr=BASE dtype=fp32 shape=1024 init=random seed=1+RANK
.tensor INB hbm addr=BASE+0x1000 dtype=bf16 shape=1024 init=random seed=1001+RANK
.tensor AR hbm addr=BASE+0x2000 dtype=fp32 shape=1024 output
.tensor ARB hbm addr=BASE+0x3000 dtype=bf16 shape=1024 output
.tensor RS hbm addr=BASE+0x4000 dtype=fp32 shape=1024/CHIPS output
.tensor AG hbm addr=BASE+0x10000 dtype=fp32 shape=32*CHIPS*CORES output
.tensor A2A hbm addr=BASE+0x5000 dtype=bf16 shape=1024 output
.tensor BACK hbm addr=BASE+0x6000 dtype=fp32 shape=1024 output
.tensor T_sb sbuf addr=0 dtype=fp32 shape=8x128
.sem reduced
.sem loaded
.queue cc
  all_reduce dtype=fp32 src=IN dst=AR bytes=4096 group=chips algo=torus2d-split signal=reduced+=1
  all_reduce dtype=bf16 src=INB dst=ARB bytes=2048 group=cores
  reduce_scatter dtype=fp32 src=IN dst=RS bytes=4096/CHIPS group=chips algo=ring
  all_gather dtype=fp32 src=IN dst=AG bytes=128 group=all algo=torus2d-split
  all_to_all dtype=bf16 src=INB dst=A2A bytes=2048/CORES group=cores
.queue sp
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=AR sbuf_addr=T_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=reduced>=1 signal=loaded+=1
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=BACK sbuf_addr=T_sb bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION wait=loaded>=1
