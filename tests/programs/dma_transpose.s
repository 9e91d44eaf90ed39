# DMA transpose: X [256, 128] BF16 in HBM lands in SBUF as XT [128 partitions, 256], column c of
# X in partition c, on the way in (dma_transpose: 16-row blocks, rtl/dma/README.md); XT goes back
# to HBM as is. Each of the 16 DMA engines transposes 16 rows of X, a block of its own.
# tests/check_examples.py checks XT against X.T bit for bit.

.tensor X   hbm  addr=0x00000 dtype=bf16 shape=256x128 init=random seed=71
.tensor XT  hbm  addr=0x10000 dtype=bf16 shape=128x256 output
.tensor xt  sbuf addr=0x0000 dtype=bf16 shape=128x256

.sem loaded
.sem dma_done

.queue sp
.rept e 16
  dma_transpose engine=e hbm_addr=X+e*16*256 sbuf_addr=xt+e*16*2 bytes=256 count1=16 hbm_stride1=256 signal=loaded+=1
.endr
sem_wait loaded>=16
.rept e 16
  dma_copy engine=e dir=sbuf_to_hbm hbm_addr=XT+e*8*512 sbuf_addr=e*8*SBUF_PARTITION+xt bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION signal=dma_done+=1
.endr
