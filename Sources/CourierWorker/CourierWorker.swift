// CourierWorker module
