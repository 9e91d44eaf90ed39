# A known gap of the golden core's DMA timing (issues 49 and 50), not asserted: attention_head.s's
# loads alone. Each of 16 DMA engines loads a 2 KiB slice of Q^T, then of K^T, then of V; each
# matrix lies in two pseudo-channels, so the two of Q^T fill first, eight engines in each, and
# as the engines move on, up to six are full at once and the ports wait on them in turn.
# Golden / RTL: 0.923 at uniform, 0.933 at trn1, 0.992 at trn2 (the default, the only preset
# inside the band). On the RTL at trn2 the odd engines (ports 1 and 3; their slices in bank
# groups 2 and 3 of each channel) take up to twice as long as the even ones over the K^T and V
# loads, and the four odd engines of a channel end their Q^T and K^T loads within about 130
# cycles of each other.
#   build/tb/ncore run --engine golden --timing uniform tests/programs/gaps/qkv_loads.s --json
#   build/tb/ncore run --engine rtl    --timing uniform tests/programs/gaps/qkv_loads.s --json
# model/README.md ("Full read queues") says what the golden core's rules do with it.

.tensor QT    hbm  addr=0x00000 dtype=bf16 shape=128x128 init=random seed=41
.tensor KT    hbm  addr=0x08000 dtype=bf16 shape=128x128 init=random seed=42
.tensor V     hbm  addr=0x10000 dtype=bf16 shape=128x128 init=random seed=43
.tensor QT_sb sbuf addr=0x000   dtype=bf16 shape=128x128
.tensor KT_sb sbuf addr=0x100   dtype=bf16 shape=128x128
.tensor V_sb  sbuf addr=0x200   dtype=bf16 shape=128x128
.sem loaded    # 16 engines, each after its three loads

.queue sp
.rept e 16
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=QT+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+QT_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=KT+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+KT_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=V+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+V_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
