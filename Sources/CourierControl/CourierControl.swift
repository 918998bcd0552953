// CourierControl module
