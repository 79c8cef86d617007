"""Brokers sharing one room through Redis: the backplane and its bookkeeping."""
