# The cc queue on a lone core (test_core_rtl, size 8): every group has one member, so each
# collective copies src to dst (model::LoneCollectives, and the RTL harness's collective engine).
# The four operations in FP32 and BF16, a core_barrier (a pair of one: it takes its latency and
# moves nothing), a fence nop on cc, and a DMA that reads what a collective wrote back into SBUF
# and out again, after its signal.
.tensor IN hbm addr=0x0000 dtype=fp32 shape=256 init=random seed=11
.tensor INB hbm addr=0x0400 dtype=bf16 shape=512 init=random seed=12
.tensor AR hbm addr=0x1000 dtype=fp32 shape=256 output
.tensor AG hbm addr=0x1400 dtype=bf16 shape=512 output
.tensor RS hbm addr=0x1800 dtype=fp32 shape=64 output
.tensor A2A hbm addr=0x1900 dtype=bf16 shape=256 output
.tensor BACK hbm addr=0x2000 dtype=fp32 shape=256 output
.tensor T_sb sbuf addr=0 dtype=fp32 shape=8x32
.sem reduced
.sem fenced
.sem loaded
.queue cc
  all_reduce dtype=fp32 src=IN dst=AR bytes=1024 group=chips algo=torus2d-split signal=reduced+=1
  all_gather dtype=bf16 src=INB dst=AG bytes=1024 group=cores algo=ring
  reduce_scatter dtype=fp32 src=IN dst=RS bytes=256 group=all algo=rhd
  all_to_all dtype=bf16 src=INB dst=A2A bytes=512 group=chips
  core_barrier group=pair
  nop signal=fenced+=1
.queue sp
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=AR sbuf_addr=T_sb bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION wait=reduced>=1 signal=loaded+=1
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=BACK sbuf_addr=T_sb bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION wait=loaded>=1
  nop wait=fenced>=1
