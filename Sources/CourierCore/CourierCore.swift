// CourierCore module
