// CourierHTTP module
