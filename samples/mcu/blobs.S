/* blobs.S: the model and the test samples, in flash as they are on disk
 * (the assembler's .incbin: no conversion step). MODEL and SAMPLES are
 * their paths (the Makefile's -D). The model is 64-byte aligned, as the
 * format's sections are, so its dense fp32 weights are read in place.
 */
    .section .rodata.model, "a"
    .balign 64
    .global model
model:
    .incbin MODEL
    .global model_end
model_end:

    .section .rodata.samples, "a"
    .balign 4
    .global samples
samples:
    .incbin SAMPLES
    .global samples_end
samples_end:
