print("jobworker")
