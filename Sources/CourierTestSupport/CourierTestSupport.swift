// CourierTestSupport module
