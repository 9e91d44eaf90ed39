# HBM streaming, SPMD: every core copies its own 640 KiB from HBM into SBUF and back to HBM, with
# 10 of its 16 DMA engines busy at once (one 32 KiB row per descriptor, into one partition each).
# The cores' regions are 64 MiB apart (CORE predefined), so the chip's HBM sees 8 streams.
# Used by the contention tests (tests/test_system_run.cpp): the cores' DMA demand (8 x 10
# engines x 28.8 GB/s) stays under the chip's 2.9 TB/s, so 8 cores take about as long as one.
.equ ENGINES 10
.equ ROWS 20
.equ ROW 32768
.equ BASE CORE*0x4000000
.tensor IN hbm addr=BASE dtype=bf16 shape=ROWS*ROW/2 init=ramp
.tensor OUT hbm addr=BASE+0x2000000 dtype=bf16 shape=ROWS*ROW/2 output
.sem loaded
.queue sp
.rept r ROWS
  dma_copy engine=r%ENGINES dir=hbm_to_sbuf hbm_addr=IN+r*ROW sbuf_addr=r*SBUF_PARTITION bytes=ROW signal=loaded+=1
.endr
.rept r ROWS
  dma_copy engine=r%ENGINES dir=sbuf_to_hbm hbm_addr=OUT+r*ROW sbuf_addr=r*SBUF_PARTITION bytes=ROW wait=loaded>=ROWS
.endr
