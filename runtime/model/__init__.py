"""The modeled side: the hardware table, the cost model, the partition calculator and the encoding cost. Modeled times, never measured ones."""
