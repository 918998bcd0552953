print("jobctl")
