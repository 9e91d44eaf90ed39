# A known gap of the golden core's DMA timing (issues 49 and 50), not inside the 5% band and
# not asserted: 16 DMA engines, issued back to back, each broadcast one 2 KiB HBM row to 8
# partitions (HBM row stride 0), as layernorm.s loads its gain. All 128 reads hit one
# pseudo-channel and its two bank groups, so its 64-entry read queue stays full.
#   build/tb/ncore run --engine golden --timing uniform tests/programs/gaps/broadcast_row.s --json
#   build/tb/ncore run --engine rtl    --timing uniform tests/programs/gaps/broadcast_row.s --json
# model/README.md ("Full read queues") gives the figures and what they say about the model.

.tensor G  hbm  addr=0x40000 dtype=bf16 shape=1x1024 init=random seed=62
.tensor g  sbuf addr=0x0800  dtype=bf16 shape=128x1024
.sem loaded    # 16 descriptors

.queue sp
.rept i 16
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=G sbuf_addr=i*8*SBUF_PARTITION+g bytes=2048 count1=8 hbm_stride1=0 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
