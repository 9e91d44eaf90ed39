# SPMD constants: every core of every chip copies slice CHIP * CORES + CORE (64 INT32s) of a
# ramp shared by the chip's cores into its own output, through SBUF. CHIP, CORE, CHIPS and CORES
# are predefined per core by `ncore tlm run` (ncore run: 0, 0, 1, 1).
.equ N 64
.equ SLICE CHIP*CORES+CORE
.tensor RAMP hbm addr=0 dtype=int32 shape=CHIPS*CORES*N init=ramp
.tensor OUT hbm addr=0x100000+CORE*0x1000 dtype=int32 shape=N output
.sem loaded
.queue sp
  dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=RAMP+SLICE*N*4 sbuf_addr=0 bytes=N*4 signal=loaded+=1
  dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=OUT sbuf_addr=0 bytes=N*4 wait=loaded>=1
