print("courier-breaker-sim: not built yet")
